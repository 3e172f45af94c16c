"""contraction-triangle: only the tiles on one side of the diagonal get a block.

Real runs on PoCL against the original at sizes that divide nothing (300 rows: 3 x 3 tiles of 128 with a short last
one; 45 terms: a short last k slice; the harness also checks the halved sizes), refusals, the zoo's symmetric and
triangular kernels rewritten and compiled by nvcc, and the search's order. Kernels written here from scratch.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from mep_util import ParamSpec, make_mep, manifest

from s2s.lang.edits import LaunchChange, Refused
from s2s.lang.kernel_facts import kernel_facts
from s2s.optimize.candidate import Candidate
from s2s.optimize.registry import Applied, make_pass, parse_pipeline, run_pass

pytestmark = pytest.mark.usefixtures("pocl_unoptimized")  # outputs compared, nothing timed (conftest)

HEAD = """__kernel void {name}(__global const float* a, __global float* c, float alpha, float beta, int n, int nk)
{{
    int j = get_global_id(0);
    int i = get_global_id(1);
"""
# C = alpha A A^T + beta C over all n x n, accumulated in global memory (syrk's own shape)
SYRK = HEAD.format(name="syrk") + """\
    if (i < n && j < n) {
        c[i * n + j] *= beta;
        for (int k = 0; k < nk; k++)
            c[i * n + j] += alpha * a[i * nk + k] * a[j * nk + k];
    }
}
"""
# C = alpha A^T A + beta C (column k of A is a[k*n + i]), an exit guard, a local accumulator, beta after the loop
GRAM = HEAD.format(name="gram") + """\
    if (i >= n || j >= n) return;
    float s = 0.0f;
    for (int k = 0; k < nk; ++k)
        s += a[k * n + i] * a[k * n + j];
    c[i * n + j] = alpha * s + beta * c[i * n + j];
}
"""
# the lower triangle only (a triangular output: j <= i), a product of two different arrays is fine here
LOWER = HEAD.format(name="lower").replace("__global float* c", "__global const float* b, __global float* c") + """\
    if (j > i || i >= n || j >= n) return;
    float s = 0.0f;
    for (int k = 0; k < nk; k++)
        s += a[i * nk + k] * b[j * nk + k];
    c[i * n + j] = s;
}
"""
# the upper triangle (i <= j) of a rectangular output: n rows, 2n columns
UPPER = HEAD.format(name="upper") + """\
    if (i < n && j >= i && j < 2 * n) {
        float s = 0.0f;
        for (int k = 0; k < nk; k++)
            s += a[i * nk + k] * a[j * nk + k];
        c[i * 2 * n + j] = s;
    }
}
"""
# C = alpha (A B^T + B A^T) + beta C through macros: a sum of two products that exchanging i and j maps onto itself
SYR2K = "#define AM(r, s) a[(r) * nk + (s)]\n#define BM(r, s) b[(r) * nk + (s)]\n" + \
    HEAD.format(name="syr2k").replace("__global float* c", "__global const float* b, __global float* c") + """\
    if (i < n && j < n) {
        float acc = 0.0f;
        for (int k = 0; k < nk; k++)
            acc += AM(j, k) * BM(i, k) + BM(j, k) * AM(i, k);
        c[i * n + j] = beta * c[i * n + j] + alpha * acc;
    }
}
"""
KERNELS = {"syrk": SYRK, "gram": GRAM, "lower": LOWER, "upper": UPPER, "syr2k": SYR2K}
WIDE = {"upper": 2}  # columns per row of n


def _state(kernel: str, mep: Path, n: int, nk: int):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    src = KERNELS[kernel]
    cols = WIDE.get(kernel, 1) * n
    params = [ParamSpec("a", "__global const float*", "in", "float", count=cols * nk, space="global"),
              *([ParamSpec("b", "__global const float*", "in", "float", count=n * nk, space="global")] if "float* b" in src else []),
              ParamSpec("c", "__global float*", "inout", "float", count=n * cols, space="global"),
              ParamSpec("alpha", "float", "scalar", "float", value=1.5), ParamSpec("beta", "float", "scalar", "float", value=-0.5),
              ParamSpec("n", "int", "scalar", "int", value=n), ParamSpec("nk", "int", "scalar", "int", value=nk)]
    grid = (-(-cols // 16) * 16, -(-n // 16) * 16, 1)
    make_mep(mep, src, manifest(kernel, "opencl", "kernel.cl", params, grid, (16, 16, 1), repetitions=2, warmup=1, timeout_s=120.0))
    return State(manifest=load(mep), original=src.encode(), kernel=kernel, dialect="opencl", facts=kernel_facts(src.encode(), "opencl", kernel))


def _evaluate(mep: Path, state, cand: Candidate):  # type: ignore[no-untyped-def]
    from s2s.mep.evaluate import evaluate
    from s2s.optimize.loop import write_variant

    write_variant(mep, state.manifest.kernel_file, cand)
    return evaluate(mep, cand.id, time=False)


def _candidate(kernel: str, mep: Path, n: int, nk: int, pipeline: str):  # type: ignore[no-untyped-def]
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _state(kernel, mep, n, nk)
    cand = apply_pipeline(pipeline, state)
    assert isinstance(cand, Candidate), cand
    return state, cand


@pytest.mark.slow
@pytest.mark.parametrize("kernel,n,pipeline", [
    ("syrk", 300, "contraction-triangle"), ("gram", 300, "contraction-triangle{prefetch=true}"),
    ("lower", 300, "contraction-triangle"), ("upper", 150, "contraction-triangle{prefetch=true}"),
    ("syrk", 67, "contraction-triangle{bk=16}"), ("syrk", 300, "contraction-triangle{tile=64}"),
    ("gram", 67, "contraction-triangle{tile=64 bk=16 prefetch=true}"), ("lower", 300, "contraction-triangle{tile=64 prefetch=true}"),
    ("upper", 150, "contraction-triangle{tile=64}"), ("syr2k", 300, "contraction-triangle"),
    ("syr2k", 300, "contraction-triangle{tile=64}")])
def test_matches_the_original_on_pocl(tmp_path: Path, kernel: str, n: int, pipeline: str) -> None:
    """Every element the original writes (the diagonal tiles' own side, both places of a symmetric one), nothing else:
    the harness poisons the output and compares all of it, at n and at n/2."""
    pytest.importorskip("pyopencl")
    state, cand = _candidate(kernel, tmp_path / "mep", n, 45, pipeline)
    side = 64 if "tile=64" in pipeline else 128
    assert cand.launch is not None and cand.launch.block == (side // 8, side // 8, 1)
    assert cand.launch.grid[:2] == (-(-n * WIDE.get(kernel, 1) // side) * side // 8, -(-n // side) * side // 8)  # work-items
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    assert m.outputs and all(o.ok for o in m.outputs) and m.input_sets >= 1


@pytest.mark.slow
def test_the_mirrored_store_and_the_tile_map_are_not_vacuous(tmp_path: Path) -> None:
    """Without the mirrored stores the upper triangle stays unwritten; with the diagonal tiles mirrored too their
    (row, col) and (col, row) elements race, each with beta applied twice; a triangular output whose blocks' map is
    read the other way round (the tiles above the diagonal) misses its elements: each is caught."""
    pytest.importorskip("pyopencl")
    state, cand = _candidate("syrk", tmp_path / "syrk", 300, 45, "contraction-triangle")
    text = cand.source.decode()
    assert text.count("c[i * n + j] += acc[m];") == 2
    broken = {"no mirror": text.replace("if (row0 != col0) {", "if (0) {"),
              "diagonal twice": text.replace("if (row0 != col0) {", "if (1) {")}
    for why, src in broken.items():
        assert src != text, why
        assert _evaluate(tmp_path / "syrk", state, replace(cand, source=src.encode())).verdict == "wrong-output", why
    state, cand = _candidate("lower", tmp_path / "lower", 300, 45, "contraction-triangle")
    text = cand.source.decode()
    src = text.replace("row0 = bmaj * 128, col0 = bmin * 128", "row0 = bmin * 128, col0 = bmaj * 128")
    assert src != text
    assert _evaluate(tmp_path / "lower", state, replace(cand, source=src.encode())).verdict == "wrong-output"


@pytest.mark.slow
def test_a_column_loop_opened_by_inner_loop_threads_on_pocl(tmp_path: Path) -> None:
    """covar_cols' shape: one thread per column j1 looping j2 >= j1, the mirrored store in the loop body; after
    inner-loop-threads the guard is j2 >= j1, so only the tiles below the diagonal run, and they write both places."""
    pytest.importorskip("pyopencl")
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import apply_pipeline

    src = """\
__kernel void cols(__global const float* data, __global float* sym, int m, int rows)
{
    int j1 = get_global_id(0);
    if (j1 < m) {
        for (int j2 = j1; j2 < m; j2++) {
            sym[j1 * m + j2] = 0.0f;
            for (int r = 0; r < rows; r++)
                sym[j1 * m + j2] += data[r * m + j1] * data[r * m + j2];
            sym[j2 * m + j1] = sym[j1 * m + j2];
        }
    }
}
"""
    m_, rows = 290, 45
    params = [ParamSpec("data", "__global const float*", "in", "float", count=rows * m_, space="global"),
              ParamSpec("sym", "__global float*", "out", "float", count=m_ * m_, space="global"),
              ParamSpec("m", "int", "scalar", "int", value=m_), ParamSpec("rows", "int", "scalar", "int", value=rows)]
    mep = tmp_path / "mep"
    make_mep(mep, src, manifest("cols", "opencl", "kernel.cl", params, (-(-m_ // 64) * 64, 1, 1), (64, 1, 1),
                                repetitions=2, warmup=1, timeout_s=120.0))
    state = State(manifest=load(mep), original=src.encode(), kernel="cols", dialect="opencl", facts=kernel_facts(src.encode(), "opencl", "cols"))
    for tile in (128, 64):
        cand = apply_pipeline(f"inner-loop-threads{{block=16x16}},contraction-triangle{{tile={tile}}}", state)
        assert isinstance(cand, Candidate), cand
        assert b"if (bmaj >= nmaj) return;" in cand.source and b"sym[j2 * m + j1] = sym[j1 * m + j2];" in cand.source
        m = _evaluate(mep, state, cand)
        assert m.verdict == "ok", (tile, m.verdict, m.messages)


def test_forms_and_launch() -> None:
    syrk = run_pass(make_pass("contraction-triangle"), SYRK.encode(), "opencl")
    assert isinstance(syrk, Applied), syrk
    assert syrk.launch == LaunchChange((16, 16, 1), "tile-coarse", per_item=128)  # contraction-blocking's launch
    assert syrk.note.startswith("the tiles below the diagonal only, each written at (i, j) and (j, i); 128x128 tiles")
    text = syrk.text.decode()
    assert "sqrt(8.0f * lin + 1.0f)" in text and "get_num_groups(0)" in text  # OpenCL's names
    # summed from zero, beta applied at the store, once per place
    assert "acc[m] = c[i * n + j];" not in text and text.count("c[i * n + j] *= beta;") == 2
    lower = run_pass(make_pass("contraction-triangle"), LOWER.encode(), "opencl")
    assert isinstance(lower, Applied) and lower.note.startswith("the tiles below the diagonal only; ")
    ltext = lower.text.decode()
    assert "acc[m] = s;" in ltext and "float s = acc[m];" in ltext and "row0 != col0" not in ltext  # the original's sums
    upper = run_pass(make_pass("contraction-triangle"), UPPER.encode(), "opencl")
    assert isinstance(upper, Applied) and upper.note.startswith("the tiles above the diagonal only; ")
    assert "row0 = bmin * 128, col0 = bmaj * 128" in upper.text.decode()
    small = run_pass(make_pass("contraction-triangle", {"tile": "64"}), SYRK_CU.encode(), "cuda")
    assert isinstance(small, Applied) and small.launch == LaunchChange((8, 8, 1), "tile-coarse", per_item=64)
    assert small.text.startswith(b"__global__ void __launch_bounds__(64, 8) syrk(") and small.note.count("64x64 tiles") == 1
    assert b"row0 = bmaj * 64, col0 = bmin * 64;" in small.text and b"__shared__ float4 As[8][17];" in small.text
    bad = run_pass(make_pass("contraction-triangle", {"tile": "32"}), SYRK_CU.encode(), "cuda")
    assert isinstance(bad, Refused) and "tile must be 128 or 64" in bad.reason
    gram = run_pass(make_pass("contraction-triangle"), GRAM.encode(), "opencl")
    assert isinstance(gram, Applied) and "(j, i)" in gram.note
    assert "float s = 0.0f;\n            s += acc[m];\n            c[i * n + j] = alpha * s + beta * c[i * n + j];" in gram.text.decode()


@pytest.mark.parametrize("src,why", [
    (LOWER.replace("if (j > i || i >= n || j >= n) return;", "if (i >= n || j >= n) return;"), "not the same product with i and j"),
    (SYRK.replace("a[j * nk + k]", "a[k * nk + j]"), "not the same product with i and j exchanged"),
    (SYRK.replace("a[j * nk + k]", "a[j * nk + k + 1]"), "not the same product with i and j exchanged"),
    (SYR2K.replace("BM(j, k) * AM(i, k)", "BM(j, k) * BM(i, k)"), "not the same product with i and j exchanged"),
    (SYR2K.replace("BM(j, k) * AM(i, k)", "2.0f * BM(j, k) * AM(i, k)"), "not the same product with i and j exchanged"),
    (SYR2K.replace("AM(j, k) * BM(i, k) + BM(j, k) * AM(i, k)", "AM(j, k) * BM(i, k) - BM(j, k) * AM(i, k)"), "a sum of products"),
    (GRAM.replace("beta * c[i * n + j]", "beta * c[j * n + i]"), "reads or writes its output at more than the output element"),
    (GRAM.replace("if (i >= n || j >= n) return;", "if (i >= n || j >= nk) return;"), "does not bound i and j alike"),
    (GRAM.replace("if (i >= n || j >= n) return;", "if (i >= n || j >= n || alpha > 2.0f) return;"), "does not bound i and j alike"),
    (GRAM.replace("s += a[k * n + i] * a[k * n + j];", "s -= a[k * n + i] * a[k * n + j];"), "must be ACC += term"),
    (GRAM.replace("s += a[k * n + i] * a[k * n + j];", "s += a[k * n + i] / a[k * n + j];"), "a sum of products"),
    (GRAM.replace("__global const float* a", "__global float* a").replace("c[i * n + j] = alpha", "a[0] = 0.0f; c[i * n + j] = alpha"),
     "a is written by the kernel"),
    (SYRK.replace("int j = get_global_id(0);", "int j = get_global_id(0) + 1;"), "without an offset"),
    (SYRK.replace("float", "double"), "float4 form needs float operands"),
], ids=["different-arrays", "not-mirrored", "shifted", "rank2k-unmatched", "rank2k-coefficient", "rank2k-difference", "output-read-elsewhere", "not-square", "extra-condition",
        "minus", "quotient", "operand-written", "offset", "double"])
def test_refusals_say_why(src: str, why: str) -> None:
    out = run_pass(make_pass("contraction-triangle"), src.encode(), "opencl")
    assert isinstance(out, Refused) and why in out.reason, out


ZOO = {"syrk": "contraction-triangle{prefetch=true}", "syrk_lower": "delinearize-2d,contraction-triangle{prefetch=true}",
       "covar_cols": "inner-loop-threads{block=16x16},contraction-triangle{prefetch=true}",
       "syr2k": "contraction-triangle"}  # syr2k's four tiles: no prefetch, as contraction-blocking (spills)


def _zoo(name: str, small: bool = False) -> bytes:
    text = (ROOT / "bench" / "zoo" / name / f"{name}.cu").read_bytes()
    spec = ZOO[name].replace("prefetch=true", "tile=64 prefetch=true") if small and "prefetch" in ZOO[name] else \
        ZOO[name] + "{tile=64}" if small else ZOO[name]
    for step, opts in parse_pipeline(spec):
        got = run_pass(make_pass(step, opts), text, "cuda", name)
        assert isinstance(got, Applied), (name, step, got)
        text = got.text
    return text


def test_zoo_forms_and_refusals() -> None:
    notes = {}
    for name in ZOO:
        text = _zoo(name).decode()
        assert "if (bmaj >= nmaj) return;" in text and "sqrtf(" in text, name
        notes[name] = text.count("if (row0 != col0)")
    assert notes == {"syrk": 1, "syrk_lower": 0, "covar_cols": 0, "syr2k": 1}  # syrk and syr2k compute their mirror
    for name, why in (("gemm_naive", "A[row * n + k] * B[k * n + col] is not the same product"), ("gemm_tn", "does not bound i and j alike")):
        out = run_pass(make_pass("contraction-triangle"), (ROOT / "bench" / "zoo" / name / f"{name}.cu").read_bytes(), "cuda", name)
        assert isinstance(out, Refused) and why in out.reason, (name, out)


@pytest.mark.slow
@needs_nvcc
def test_zoo_rewrites_compile_without_spills(tmp_path: Path) -> None:
    files = []
    for name in ZOO:
        for small in (False, True):
            files.append(tmp_path / f"{name}{'_64' if small else ''}.cu")
            files[-1].write_bytes(_zoo(name, small))
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    # -cubin: ptxas's counts of the device code as -c builds it; only the host compiler is not run (session_builds.device_only)
    proc = subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v", "-I", str(ROOT / "bench" / "zoo" / "syrk"), *map(str, files),
                           "--output-directory", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    spills = [line for line in proc.stderr.splitlines() if "spill" in line]
    assert len(spills) >= 2 * len(ZOO) and all(" 0 bytes spill stores" in line for line in spills), proc.stderr[-3000:]


SYRK_CU = SYRK.replace("__kernel", "__global__").replace("__global const", "const").replace("__global ", "") \
    .replace("get_global_id(0)", "blockIdx.x * blockDim.x + threadIdx.x").replace("get_global_id(1)", "blockIdx.y * blockDim.y + threadIdx.y")


def _round_one(src: str, n: int) -> list[str]:
    """The built-in proposer's first round for an n x n output over n terms, in the order it evaluates it."""
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import BuiltinProposer

    params = [ParamSpec("a", "const float*", "in", "float", count=n * n), ParamSpec("c", "float*", "inout", "float", count=n * n),
              ParamSpec("alpha", "float", "scalar", "float", value=1.5), ParamSpec("beta", "float", "scalar", "float", value=0.5),
              ParamSpec("n", "int", "scalar", "int", value=n), ParamSpec("nk", "int", "scalar", "int", value=n)]
    m = manifest("syrk", "cuda", "kernel.cu", params, (n // 16, n // 16, 1), (16, 16, 1))
    state = State(manifest=m, original=src.encode(), kernel="syrk", dialect="cuda", facts=kernel_facts(src.encode(), "cuda", "syrk"))
    return [c.origin.removeprefix("pass:") for c in BuiltinProposer().propose(state)]


def test_the_search_tries_it_first_where_it_applies() -> None:
    got = _round_one(SYRK_CU, 2048)  # 136 tiles of 128 below the diagonal, under two an SM: the 64-wide ones first
    assert got[0] == "contraction-triangle{tile=64 prefetch=true kgroups=2}", got[:7]  # first in the space (measured 1.24x)
    assert set(got[1:3]) == {"contraction-triangle{tile=64 prefetch=true}", "contraction-triangle{tile=64}"}, got[:7]
    assert set(got[3:5]) == {"contraction-triangle{prefetch=true}", "contraction-triangle"} and got[5] == "contraction-blocking", got[:7]
    big = _round_one(SYRK_CU, 8192)  # 2080 tiles: the 128-wide ones first
    assert set(big[:2]) == {"contraction-triangle{prefetch=true}", "contraction-triangle"}, big[:6]
    gemm = SYRK_CU.replace("a[j * nk + k]", "a[k * n + j]")  # A A: not symmetric, contraction-blocking's order stands
    plain = _round_one(gemm, 2048)
    assert plain[0] == "contraction-blocking" and not any("triangle" in x for x in plain), plain[:5]


def test_halved_first_moves_it_before_its_own_pipeline_only() -> None:
    from s2s.optimize.cost import halved_first

    def cand(origin: str) -> Candidate:
        return Candidate(source=b"", origin=f"pass:{origin}")

    ranked = [cand(x) for x in ("a,contraction-blocking", "contraction-blocking", "b", "a,contraction-triangle", "contraction-triangle+repair")]
    got = [c.origin.removeprefix("pass:") for c in halved_first(ranked)]
    assert got == ["a,contraction-triangle", "a,contraction-blocking", "contraction-triangle+repair", "contraction-blocking", "b"]


def test_the_gpu_plan_times_every_form_behind_its_opening_step() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    from gpu_zoo_plans import load_plan

    plan = load_plan(ROOT / "bench" / "plans" / "zoo_triangle.toml")
    assert plan.name == "zoo_triangle" and plan.report == "gemm" and list(plan.steps) == ["syrk", "syrk_lower", "covar_cols", "syr2k"]
    from s2s.optimize.registry import get_pass

    space = set(get_pass("contraction-triangle").space)
    assert {s for s in space if "kgroups" not in s} < set(plan.forms) and "contraction-blocking{prefetch=true}" in plan.forms
    assert {s for s in space if "kgroups" in s} <= {f for f, _ in load_plan(ROOT / "bench" / "plans" / "zoo_triangle_next.toml").steps["syrk"]}
    assert all(p == f"inner-loop-threads{{block=16x16}},{f}" for f, p in plan.steps["covar_cols"])
    assert all(p == f"delinearize-2d,{f}" for f, p in plan.steps["syrk_lower"]) and all(p == f for f, p in plan.steps["syrk"])


LOWER_1D_CU = """\
__global__ void lower1d(const float* a, float* c, float alpha, float beta, int n, int nk)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int i = idx / n;
    int j = idx % n;
    if (i >= n || j > i)
        return;
    float s = 0.0f;
    for (int k = 0; k < nk; k++)
        s += a[k * n + i] * a[k * n + j];
    c[i * n + j] = s;
}
"""


def test_a_flat_triangle_opens_to_it_in_round_one_and_later_rounds_try_it_first() -> None:
    """syrk_lower's shape (one flat index): delinearize-2d's space carries it, ahead of delinearize-2d,contraction-blocking;
    later rounds extend a base in the space's order, where it comes before contraction-blocking."""
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import BuiltinProposer
    from s2s.optimize.registry import search_space

    n = 2048
    params = [ParamSpec("a", "const float*", "in", "float", count=n * n), ParamSpec("c", "float*", "out", "float", count=n * n),
              ParamSpec("alpha", "float", "scalar", "float", value=1.5), ParamSpec("beta", "float", "scalar", "float", value=0.5),
              ParamSpec("n", "int", "scalar", "int", value=n), ParamSpec("nk", "int", "scalar", "int", value=n)]
    m = manifest("lower1d", "cuda", "kernel.cu", params, (n * n // 256, 1, 1), (256, 1, 1))
    src = LOWER_1D_CU.encode()
    state = State(manifest=m, original=src, kernel="lower1d", dialect="cuda", facts=kernel_facts(src, "cuda", "lower1d"))
    got = [c.origin.removeprefix("pass:") for c in BuiltinProposer().propose(state)]
    assert got[0] == "delinearize-2d,contraction-triangle{tile=64 prefetch=true}", got[:5]
    assert got.index("delinearize-2d,contraction-triangle{tile=64 prefetch=true}") < got.index("delinearize-2d,contraction-blocking")
    space = search_space()
    assert max(space.index(s) for s in get_pass_space()) < space.index("contraction-blocking")


def get_pass_space() -> tuple[str, ...]:
    from s2s.optimize.registry import get_pass

    return tuple(get_pass("contraction-triangle").space)
