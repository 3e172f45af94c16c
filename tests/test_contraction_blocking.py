"""contraction-blocking: real runs on PoCL against the original (odd sizes: every edge guard; sizes that are multiples
of 4: the float4 path), the run-time alignment check shown to route loads, refusals, nvcc builds of the zoo kernels.

Kernels written here from scratch in the shapes real dense linear algebra uses: A[i][k]·B[k][j] scaled into global
memory, A[i][k]·A[j][k] (a rank-k update), A[k][i]·B[k][j] (a transposed left operand), a rank-2k update with two
operands a side through macros.
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
from s2s.optimize.registry import Applied, make_pass, run_pass, search_space

pytestmark = pytest.mark.usefixtures("pocl_unoptimized")  # outputs compared, nothing timed (conftest)

GEMM_CL = """\
__kernel void gemm(__global const float* a, __global const float* b, __global float* c, float alpha, float beta,
                   int ni, int nj, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < ni && j < nj) {
        c[i * nj + j] *= beta;
        for (int k = 0; k < nk; k++)
            c[i * nj + j] += alpha * a[i * nk + k] * b[k * nj + j];
    }
}
"""
SYRK_CL = """\
__kernel void syrk(__global const float* a, __global const float* b, __global float* c, float alpha, float beta,
                   int ni, int nj, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i >= ni || j >= nj) return;
    float s = 0.0f;
    for (int k = 0; k < nk; ++k)
        s += a[i * nk + k] * a[j * nk + k];
    c[i * nj + j] = alpha * s + beta * c[i * nj + j];
}
"""
ATB_CL = """\
__kernel void atb(__global const float* a, __global const float* b, __global float* c, float alpha, float beta,
                  int ni, int nj, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < ni && j < nj) {
        float s = 0.0f;
        for (int k = 0; k < nk; ++k)
            s = s + a[k * ni + i] * b[k * nj + j];
        c[i * nj + j] = s;
    }
}
"""
SYR2K_CL = """\
#define AM(r, s) a[(r) * nk + (s)]
#define BM(r, s) b[(r) * nk + (s)]
__kernel void syr2k(__global const float* a, __global const float* b, __global float* c, float alpha, float beta,
                    int ni, int nj, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < ni && j < nj) {
        float acc = 0.0f;
        for (int k = 0; k < nk; k++)
            acc += AM(j, k) * BM(i, k) + BM(j, k) * AM(i, k);
        c[i * nj + j] = beta * c[i * nj + j] + alpha * acc;
    }
}
"""
# the lower triangle only: blocks above the diagonal have no output to write and leave at once
LOWER_CL = """\
__kernel void lower(__global const float* a, __global const float* b, __global float* c, float alpha, float beta,
                    int ni, int nj, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (j > i || i >= ni || j >= nj) return;
    float s = 0.0f;
    for (int k = 0; k < nk; k++)
        s += a[k * ni + i] * a[k * ni + j];
    c[i * nj + j] = s;
}
"""
# every other element along i: the row side's loads run along i, but four neighbouring i are not one float4
STRIDED_CL = """\
__kernel void strided(__global const float* a, __global const float* b, __global float* c, float alpha, float beta,
                      int ni, int nj, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < ni && j < nj) {
        float s = 0.0f;
        for (int k = 0; k < nk; ++k)
            s += a[k * (2 * ni) + 2 * i] * b[k * nj + j];
        c[i * nj + j] = s;
    }
}
"""
KERNELS = {"gemm": GEMM_CL, "syrk": SYRK_CL, "atb": ATB_CL, "syr2k": SYR2K_CL, "lower": LOWER_CL, "strided": STRIDED_CL}
# (ni, nj, nk): 67 x 45 x 37 divides nothing, nor do the halved sizes the harness also checks (33 x 22 x 18), and no row
# of them starts on a 16-byte boundary; 136 x 72 x 44 keeps every row 16-byte aligned
ODD, ALIGNED = (67, 45, 37), (136, 72, 44)
# full blocks: rows 0-255 and columns 0-127 of 264 x 136 outputs lie wholly inside, nk = 48 is whole slices of 8 and 16
FULL = (264, 136, 48)


def _state(kernel: str, mep: Path, sizes: tuple[int, int, int]):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    ni, nj, nk = sizes
    rows = max(ni, nj)
    src = KERNELS[kernel]
    params = [ParamSpec("a", "__global const float*", "in", "float", count=2 * rows * nk, space="global"),
              ParamSpec("b", "__global const float*", "in", "float", count=max(rows * nk, nk * nj), space="global"),
              ParamSpec("c", "__global float*", "inout", "float", count=ni * nj, space="global"),
              ParamSpec("alpha", "float", "scalar", "float", value=1.5), ParamSpec("beta", "float", "scalar", "float", value=-0.5),
              ParamSpec("ni", "int", "scalar", "int", value=ni), ParamSpec("nj", "int", "scalar", "int", value=nj),
              ParamSpec("nk", "int", "scalar", "int", value=nk)]
    grid = (-(-nj // 16) * 16, -(-ni // 16) * 16, 1)
    make_mep(mep, src, manifest(kernel, "opencl", "kernel.cl", params, grid, (16, 16, 1), repetitions=2, warmup=1, timeout_s=120.0))
    return State(manifest=load(mep), original=src.encode(), kernel=kernel, dialect="opencl", facts=kernel_facts(src.encode(), "opencl", kernel))


def _evaluate(mep: Path, state, cand: Candidate):  # type: ignore[no-untyped-def]
    from s2s.mep.evaluate import evaluate
    from s2s.optimize.loop import write_variant

    write_variant(mep, state.manifest.kernel_file, cand)
    return evaluate(mep, cand.id, time=False)


def _candidate(kernel: str, mep: Path, sizes: tuple[int, int, int], pipeline: str):  # type: ignore[no-untyped-def]
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _state(kernel, mep, sizes)
    cand = apply_pipeline(pipeline, state)
    assert isinstance(cand, Candidate), cand
    return state, cand


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["gemm", "syrk", "atb", "syr2k"])
@pytest.mark.parametrize("sizes,pipeline", [(ODD, "contraction-blocking"), (ALIGNED, "contraction-blocking{prefetch=true}"),
                                            (ODD, "contraction-blocking{bk=16 prefetch=true}"), (ALIGNED, "contraction-blocking{bk=16}"),
                                            (FULL, "contraction-blocking"), (FULL, "contraction-blocking{prefetch=true lb=1 vstore=true}"),
                                            (FULL, "contraction-blocking{bk=16 vstore=true}")],
                         ids=["odd", "aligned-prefetch", "odd-bk16-prefetch", "aligned-bk16", "full", "full-prefetch-vstore", "full-bk16-vstore"])
def test_matches_the_original_on_pocl(tmp_path: Path, kernel: str, sizes: tuple[int, int, int], pipeline: str) -> None:
    pytest.importorskip("pyopencl")
    state, cand = _candidate(kernel, tmp_path / "mep", sizes, pipeline)
    ni, nj, _ = sizes
    assert cand.launch is not None and cand.launch.block == (16, 16, 1)
    assert cand.launch.grid[:2] == (-(-nj // 128) * 16, -(-ni // 128) * 16)  # work-items: 128 x 128 outputs per group
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    assert m.outputs and all(o.ok for o in m.outputs) and m.input_sets >= 1


@pytest.mark.slow
def test_a_triangular_guard_on_pocl(tmp_path: Path) -> None:
    """300 x 300 outputs in 3 x 3 blocks of 128 x 128: the 3 above the diagonal leave at once, the diagonal ones
    write only their lower part (the harness's poison shows any write above it)."""
    pytest.importorskip("pyopencl")
    state, cand = _candidate("lower", tmp_path / "mep", (300, 300, 37), "contraction-blocking")
    assert b"if (!alive) return;" in cand.source
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    broken = cand.source.replace(b"if (!alive) return;", b"if (alive) return;")  # the live blocks leave instead
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict != "ok"


def _break_vector_path(cand: Candidate, full: bool = False) -> Candidate:
    """The same rewrite with the float4 load's lanes exchanged: wrong wherever the vector path really runs (`full`: the
    full blocks' copy, else the guarded text's)."""
    text = cand.source.decode()
    first = text.index("= v.x;", 0 if full else text.index("if (!alive) return;"))
    broken = text[:first] + "= v.y;" + text[first + len("= v.x;"):]
    assert broken != text
    return replace(cand, source=broken.encode())


@pytest.mark.slow
def test_vector_path_runs_where_aligned_and_only_there(tmp_path: Path) -> None:
    """The run-time check routes the loads: a broken float4 path fails at sizes whose rows are 16-byte aligned and
    is never taken at odd ones (nk = 37 and 18: a row of a starts off a 16-byte boundary), where the scalar path verifies."""
    pytest.importorskip("pyopencl")
    state, cand = _candidate("gemm", tmp_path / "aligned", ALIGNED, "contraction-blocking")
    assert _evaluate(tmp_path / "aligned", state, _break_vector_path(cand)).verdict == "wrong-output"
    state, cand = _candidate("gemm", tmp_path / "odd", ODD, "contraction-blocking")
    m = _evaluate(tmp_path / "odd", state, _break_vector_path(cand))
    assert m.verdict == "ok", (m.verdict, m.messages)


def _cu(src: str) -> str:
    return src.replace("__kernel", "__global__").replace("__global const", "const").replace("__global ", "") \
        .replace("get_global_id(0)", "blockIdx.x * blockDim.x + threadIdx.x").replace("get_global_id(1)", "blockIdx.y * blockDim.y + threadIdx.y")


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["gemm", "syrk", "atb"])
@pytest.mark.parametrize("pipeline", ["contraction-blocking", "contraction-blocking{prefetch=true lb=1 vstore=true}",
                                      "contraction-blocking{bk=16 vstore=true}"])
def test_full_blocks_match_bit_for_bit_on_the_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel: str, pipeline: str) -> None:
    """The CUDA text (the full blocks' copy is CUDA only) on the CPU emulator at sizes with full blocks and partial
    ones: every output the same bits as the original's; a broken copy (its float4 stores' lanes exchanged) differs."""
    import emulate_cuda_block
    from emulate_cuda import Launch
    from emulate_cuda_block import same_outputs

    monkeypatch.setattr(emulate_cuda_block, "SHIM", emulate_cuda_block.SHIM + "#define __launch_bounds__(...)\n")

    from s2s.optimize.registry import build_pipeline

    src, (ni, nj, nk) = _cu(KERNELS[kernel]).encode(), FULL
    text = src
    for p in build_pipeline(pipeline):
        out = run_pass(p, text, "cuda", kernel)
        assert isinstance(out, Applied), out
        text = out.text
    assert b"if (full) {" in text
    rows = max(ni, nj)
    counts = {"a": 2 * rows * nk, "b": max(rows * nk, nk * nj), "c": ni * nj}
    scalars = {"alpha": "1.5f", "beta": "-0.5f", "ni": str(ni), "nj": str(nj), "nk": str(nk)}
    launches = (Launch((-(-nj // 16), -(-ni // 16), 1), (16, 16, 1)), Launch((-(-nj // 128), -(-ni // 128), 1), (16, 16, 1)))
    assert same_outputs(tmp_path, kernel, src, text, launches, counts, scalars) == "SAME"
    if "vstore" in pipeline:
        broken = text.replace(b"w.x = ", b"w.y = ", 1)
        assert broken != text
        assert same_outputs(tmp_path, kernel, src, broken, launches, counts, scalars).startswith("DIFF c")


def test_full_copy_only_under_a_rectangular_guard() -> None:
    for src, want in ((GEMM_CL, True), (SYRK_CL, True), (LOWER_CL, False), (SYR2K_CL, False)):  # syr2k: two operands a side
        out = run_pass(make_pass("contraction-blocking"), _cu(src).encode(), "cuda")
        assert isinstance(out, Applied) and (b"if (full) {" in out.text) == want, src
    out = run_pass(make_pass("contraction-blocking", {"lb": "1"}), _cu(SYR2K_CL).encode(), "cuda")
    assert isinstance(out, Applied) and b"if (full) {" in out.text  # 255 registers: room for the copy
    for opts, dialect, src in (({"full": "false"}, "cuda", _cu(GEMM_CL)), ({}, "opencl", GEMM_CL)):  # PoCL: guarded text only
        out = run_pass(make_pass("contraction-blocking", opts), src.encode(), dialect)
        assert isinstance(out, Applied) and b"if (full) {" not in out.text
    bad = run_pass(make_pass("contraction-blocking", {"lb": "3"}), GEMM_CL.encode(), "opencl")
    assert isinstance(bad, Refused) and "lb must be 1 or 2" in bad.reason


@pytest.mark.slow
def test_a_strided_operand_keeps_to_scalar_loads(tmp_path: Path) -> None:
    """a[k * 2ni + 2i] at sizes where every address check on alignment passes: only the stride check keeps the row
    side off float4 loads, and without it the outputs are wrong."""
    pytest.importorskip("pyopencl")
    state, cand = _candidate("strided", tmp_path / "mep", ALIGNED, "contraction-blocking")
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    broken = cand.source.replace(b"== p0 + 4)", b"!= 0)", 1)
    assert broken != cand.source
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict == "wrong-output"


@pytest.mark.slow
def test_a_missing_edge_guard_is_caught_on_pocl(tmp_path: Path) -> None:
    """Not vacuous: without the last, short k slice the outputs are wrong at nk = 37."""
    pytest.importorskip("pyopencl")
    state, cand = _candidate("syrk", tmp_path / "mep", ODD, "contraction-blocking")
    broken = cand.source.replace(b"t < nk; t += 8", b"t + 8 <= nk; t += 8")
    assert broken != cand.source
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict == "wrong-output"


def test_launch_rule_and_layout_notes() -> None:
    out = run_pass(make_pass("contraction-blocking"), ATB_CL.encode(), "opencl")
    assert isinstance(out, Applied), out
    assert out.launch == LaunchChange((16, 16, 1), "tile-coarse", per_item=128)
    assert "a[k * ni + i] along i" in out.note and "b[k * nj + j] along j" in out.note  # both loaded along their unit stride
    text = out.text.decode()
    assert "vload4(0, &(a[k * ni + i]))" in text and "__local float4 As[8][33];" in text and "__launch_bounds__" not in text
    gemm = run_pass(make_pass("contraction-blocking"), GEMM_CU.encode(), "cuda")
    assert isinstance(gemm, Applied) and gemm.text.startswith(b"__global__ void __launch_bounds__(256, 2) gemm(")
    capped = GEMM_CU.replace("__global__ void", "__global__ void __launch_bounds__(128)")
    out2 = run_pass(make_pass("contraction-blocking"), capped.encode(), "cuda")
    assert isinstance(out2, Refused) and "at most 128 threads" in out2.reason
    syrk = run_pass(make_pass("contraction-blocking"), SYRK_CL.encode(), "opencl")
    assert isinstance(syrk, Applied) and "a[j * nk + k] along k" in syrk.note


def test_first_in_the_search_space() -> None:
    from s2s.optimize.registry import parse_pipeline

    def on_a_gemm(step: str) -> bool:  # contraction-triangle and triangular-solve-blocking come before it and refuse one
        name, opts = parse_pipeline(step)[0]
        return isinstance(run_pass(make_pass(name, opts), GEMM_CU.encode(), "cuda"), Applied)

    space = [s for s in search_space() if on_a_gemm(s)]
    assert space[0] == "contraction-blocking"
    assert space.index("contraction-blocking{prefetch=true}") < space.index("contraction-tiling{tile=64 rows=8}")


@pytest.mark.parametrize("src,why", [
    (GEMM_CL.replace("float", "double"), "float4 form needs float operands"),
    (GEMM_CL.replace("int k = 0; k < nk", "int k = i; k < nk"), "not a triangular range"),
    (ATB_CL.replace("    if (i < ni && j < nj) {\n", "").replace("        c[i * nj + j] = s;\n    }\n", "        c[i * nj + j] = s;\n"),
     "needs a guard"),
    (GEMM_CL.replace("c[i * nj + j] *= beta;", "__local float w[4]; w[0] = beta;"), "shared memory"),
], ids=["double", "triangular", "unguarded", "shared"])
def test_refusals_say_why(src: str, why: str) -> None:
    out = run_pass(make_pass("contraction-blocking"), src.encode(), "opencl")
    assert isinstance(out, Refused) and why in out.reason, out


def test_bad_options_are_refused() -> None:
    out = run_pass(make_pass("contraction-blocking", {"bk": "4"}), GEMM_CL.encode(), "opencl")
    assert isinstance(out, Refused) and "bk must be 8 or 16" in out.reason


ZOO_2D = ("gemm_naive", "gemm_scaled", "gemm_tn", "syrk", "syr2k")
ZOO_OPENED = {"gemm_colmajor": "delinearize-2d", "syrk_lower": "delinearize-2d", "covar_cols": "inner-loop-threads"}


def _zoo_rewrites() -> dict[str, bytes]:
    from s2s.optimize.registry import parse_pipeline

    out: dict[str, bytes] = {}
    for name in (*ZOO_2D, *ZOO_OPENED):
        text = (ROOT / "bench" / "zoo" / name / f"{name}.cu").read_bytes()
        # prefetch where one operand stands on each side (syr2k's four tiles and their prefetch registers spill 8 bytes)
        spec = f"{ZOO_OPENED[name]},contraction-blocking" if name in ZOO_OPENED else \
            ("contraction-blocking" if name == "syr2k" else "contraction-blocking{prefetch=true}")
        for step, opts in parse_pipeline(spec):
            got = run_pass(make_pass(step, opts), text, "cuda", name)
            assert isinstance(got, Applied), (name, step, got)
            text = got.text
        out[name] = text
    return out


def test_zoo_kernels_rewrite_and_batched_is_refused() -> None:
    assert set(_zoo_rewrites()) == {*ZOO_2D, *ZOO_OPENED}
    batched = (ROOT / "bench" / "zoo" / "batched_gemm8" / "batched_gemm8.cu").read_bytes()
    out = run_pass(make_pass("contraction-blocking"), batched, "cuda", "batched_gemm8")
    assert isinstance(out, Refused) and "2-D thread mapping" in out.reason  # 8x8 products: nothing to tile 128 wide


@pytest.mark.slow
@needs_nvcc
def test_zoo_rewrites_compile_without_spills(tmp_path: Path) -> None:
    files = []
    for name, text in _zoo_rewrites().items():
        files.append(tmp_path / f"{name}.cu")
        files[-1].write_bytes(text)
    for path in sorted((ROOT / "tests" / "golden" / "passes").glob("contraction_blocking_*.cu")):  # the CUDA goldens too
        expected = path.read_text().split("// ----- EXPECTED\n")[1]
        if not expected.startswith("// REFUSED"):
            files.append(tmp_path / path.name)
            files[-1].write_text(expected)
    assert len(files) == len(ZOO_2D) + len(ZOO_OPENED) + 2  # the zoo's eight and the two CUDA goldens that apply
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    # -cubin: ptxas's counts of the device code as -c builds it; only the host compiler is not run (session_builds.device_only)
    proc = subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v", "-I", str(ROOT / "bench" / "zoo" / "gemm_naive"), *map(str, files),
                           "--output-directory", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "bytes spill stores" in proc.stderr and " 0 bytes spill stores" in proc.stderr
    assert all(" 0 bytes spill" in line for line in proc.stderr.splitlines() if "spill" in line), proc.stderr[-3000:]


GEMM_CU = GEMM_CL.replace("__kernel", "__global__").replace("__global const", "const").replace("__global ", "") \
    .replace("get_global_id(0)", "blockIdx.x * blockDim.x + threadIdx.x").replace("get_global_id(1)", "blockIdx.y * blockDim.y + threadIdx.y")


def _round_one(n: int) -> list[str]:
    """The built-in proposer's first round for an n x n x n scaled GEMM, in the order it evaluates it."""
    from mep_util import manifest as make_manifest

    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import BuiltinProposer

    params = [ParamSpec("a", "const float*", "in", "float", count=n * n), ParamSpec("b", "const float*", "in", "float", count=n * n),
              ParamSpec("c", "float*", "inout", "float", count=n * n), ParamSpec("alpha", "float", "scalar", "float", value=1.5),
              ParamSpec("beta", "float", "scalar", "float", value=0.5), ParamSpec("ni", "int", "scalar", "int", value=n),
              ParamSpec("nj", "int", "scalar", "int", value=n), ParamSpec("nk", "int", "scalar", "int", value=n)]
    m = make_manifest("gemm", "cuda", "kernel.cu", params, (n // 16, n // 16, 1), (16, 16, 1))
    state = State(manifest=m, original=GEMM_CU.encode(), kernel="gemm", dialect="cuda", facts=kernel_facts(GEMM_CU.encode(), "cuda", "gemm"))
    return [c.origin.removeprefix("pass:") for c in BuiltinProposer().propose(state)]


def test_the_search_tries_it_first_on_a_large_gemm_and_not_on_a_small_one() -> None:
    big = _round_one(2048)  # 256 tiles of 128 x 128: every SM of an H200 gets one
    assert big[:3] == ["contraction-blocking", "contraction-blocking{bk=16}", "contraction-blocking{prefetch=true}"], big[:5]
    small = _round_one(512)  # 16 tiles: most SMs idle; the model's own order stands
    assert small[0] != "contraction-blocking" and "contraction-blocking" in small, small[:5]
