"""Kernels of the shapes real naive ports have (Parboil's cuda_base sgemm and cp), written here from scratch.

A product with no guard (the launch covers the outputs exactly), operands loaded into locals first, leading
dimensions as parameters and a declaration among the index declarations; a grid-point kernel looping over a
constant table (`out[W * y + x] += sum over the table`). The rewrites keep every launch as it was, so they stay
exact at any size the original is exact at: checked on PoCL against the original, refusals say why.
"""
from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import needs_nvcc
from mep_util import ParamSpec, make_mep, manifest
from session_builds import nvcc_checks

from s2s.lang.edits import Refused
from s2s.lang.kernel_facts import kernel_facts
from s2s.lang.kernel_model import kernel_model
from s2s.optimize.candidate import Candidate
from s2s.optimize.registry import Applied, make_pass, run_pass

pytestmark = pytest.mark.usefixtures("pocl_unoptimized")  # outputs compared, no timing asserted (conftest)

M, N, K = 48, 80, 45  # columns (x), rows (y), depth: no tile divides them
LDX, LDY, LDZ = 53, 83, 50

GEMM_NT_CL = """\
__kernel void gemm_nt(__global const float* x, int ldx, __global const float* y, int ldy, __global float* z, int ldz,
                      int depth, float alpha, float beta)
{
    int col = get_global_id(0);
    float sum = 0.0f;
    int row = get_global_id(1);
    for (int p = 0; p < depth; ++p) {
        float u = x[col + p * ldx];
        float v = y[row + p * ldy];
        sum += u * v;
    }
    z[col + row * ldz] = z[col + row * ldz] * beta + alpha * sum;
}
"""


# the same without locals, row-major and k-fast on the row side: the other load orientation
GEMM_NN_CL = """\
__kernel void gemm_nt(__global const float* x, int ldx, __global const float* y, int ldy, __global float* z, int ldz,
                      int depth, float alpha, float beta)
{
    int col = get_global_id(0);
    int row = get_global_id(1);
    float sum = 0.0f;
    for (int p = 0; p < depth; ++p)
        sum += x[row * ldx + p] * y[p * ldy + col];
    z[col + row * ldz] = z[col + row * ldz] * beta + alpha * sum;
}
"""


def _gemm_state(mep: Path, block: tuple[int, int, int] = (16, 16, 1), cols: int = M, src: str = GEMM_NT_CL):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    params = [ParamSpec("x", "__global const float*", "in", "float", count=max(K, N) * max(LDX, cols), space="global"),
              ParamSpec("ldx", "int", "scalar", "int", value=max(LDX, cols)),
              ParamSpec("y", "__global const float*", "in", "float", count=K * LDY, space="global"),
              ParamSpec("ldy", "int", "scalar", "int", value=LDY),
              ParamSpec("z", "__global float*", "inout", "float", count=N * max(LDZ, cols), space="global"),
              ParamSpec("ldz", "int", "scalar", "int", value=max(LDZ, cols)), ParamSpec("depth", "int", "scalar", "int", value=K),
              ParamSpec("alpha", "float", "scalar", "float", value=1.5), ParamSpec("beta", "float", "scalar", "float", value=-0.5)]
    make_mep(mep, src, manifest("gemm_nt", "opencl", "kernel.cl", params, (cols, N, 1), block, repetitions=3, warmup=1,
                                       timeout_s=60.0))
    m = load(mep)
    return State(manifest=m, original=src.encode(), kernel="gemm_nt", dialect="opencl", facts=kernel_facts(src.encode(), "opencl", "gemm_nt"))


def _evaluate(mep: Path, state, cand: Candidate):  # type: ignore[no-untyped-def]
    from s2s.mep.evaluate import evaluate
    from s2s.optimize.loop import write_variant

    write_variant(mep, state.manifest.kernel_file, cand)
    return evaluate(mep, cand.id)


def test_unguarded_contraction_keeps_the_launch() -> None:
    out = run_pass(make_pass("contraction-tiling", {"tile": "32", "rows": "4"}), GEMM_NT_CL.encode(), "opencl")
    assert isinstance(out, Applied), out
    assert out.launch is None  # every launch site keeps covering exactly the outputs it covered
    text = out.text.decode()
    assert "cols = get_num_groups(0) * get_local_size(0), rows = get_num_groups(1) * get_local_size(1)" in text
    assert "(row < rows && p < depth) ? y[row + p * ldy]" in text and "(p < depth && col < cols) ? x[col + p * ldx]" in text
    assert "acc[r] += Bs[kk][tx] * As[ty + r * 8][kk];" in text  # u * v, in that order: the same rounding
    assert "get_local_size(0) * get_local_size(1) != 256" in text  # another block shape runs the original body


@pytest.mark.slow
@pytest.mark.parametrize("pipeline", ["contraction-tiling{tile=32 rows=4}", "contraction-tiling{tile=16 rows=1}",
                                      "contraction-tiling{tile=64 rows=8}"])
def test_unguarded_contraction_matches_the_original_on_pocl(tmp_path: Path, pipeline: str) -> None:
    """48 x 80 outputs, depth 45, 16x16 work-groups: tails in both tile directions and in k; 64/8 runs the fallback."""
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _gemm_state(tmp_path / "mep")
    cand = apply_pipeline(pipeline, state)
    assert isinstance(cand, Candidate), cand
    assert cand.launch is None
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    assert m.outputs and all(o.ok for o in m.outputs)


@pytest.mark.slow
@pytest.mark.parametrize("src", [GEMM_NT_CL, GEMM_NN_CL], ids=["nt-locals", "nn"])
@pytest.mark.parametrize("pipeline", ["register-blocking{tile=64 rx=4 ry=4}", "register-blocking{tile=32 rx=2 ry=1}"])
def test_unguarded_register_blocking_matches_the_original_on_pocl(tmp_path: Path, src: str, pipeline: str) -> None:
    """64 x 64 tiles of 4 x 4 per thread at the kernel's own 16 x 16 launch; 32/2/1 is 16 x 32 threads: the fallback."""
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _gemm_state(tmp_path / "mep", src=src)
    cand = apply_pipeline(pipeline, state)
    assert isinstance(cand, Candidate), cand
    assert cand.launch is None
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)


def test_unguarded_register_blocking_loads_along_the_unit_stride() -> None:
    nt = run_pass(make_pass("register-blocking"), GEMM_NT_CL.encode(), "opencl")
    nn = run_pass(make_pass("register-blocking"), GEMM_NN_CL.encode(), "opencl")
    assert isinstance(nt, Applied) and isinstance(nn, Applied) and nt.launch is None and nn.launch is None
    assert "As[e % 64][e / 64] = (row < rows && p < depth) ? y[row + p * ldy]" in nt.text.decode()  # row is y's fast index
    assert "As[e / 16][e % 16] = (row < rows && p < depth) ? x[row * ldx + p]" in nn.text.decode()  # p is x's fast index
    summed = GEMM_NN_CL.replace("* y[p * ldy + col];", "* y[p * ldy + col] + 1.0f;")
    out = run_pass(make_pass("register-blocking"), summed.encode(), "opencl")
    assert isinstance(out, Refused) and "ACC += A * B" in out.reason


@pytest.mark.slow
def test_unguarded_contraction_at_another_block_on_pocl(tmp_path: Path) -> None:
    """The same variant launched with 64x4 work-groups (still 256 threads) over 64 x 80: tiles and blocks differ."""
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _gemm_state(tmp_path / "mep", (64, 4, 1), 64)
    cand = apply_pipeline("contraction-tiling{tile=32 rows=4}", state)
    assert isinstance(cand, Candidate), cand
    assert _evaluate(tmp_path / "mep", state, cand).verdict == "ok"


@pytest.mark.slow
def test_a_wrong_bound_is_caught_on_pocl(tmp_path: Path) -> None:
    """Not vacuous: the grid's bound dropped from the loads of the row side reads past the operand."""
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _gemm_state(tmp_path / "mep")
    cand = apply_pipeline("contraction-tiling{tile=32 rows=4}", state)
    assert isinstance(cand, Candidate), cand
    broken = cand.source.replace(b"if (row < rows && col < cols) {\n                float sum = acc[r];",
                                 b"if (row < rows + 8 && col < cols) {\n                float sum = acc[r];")
    assert broken != cand.source
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict != "ok"


def test_unguarded_contraction_refusals() -> None:
    guarded_late = GEMM_NT_CL.replace("    for (int p", "    if (col > 7) sum = 1.0f;\n    for (int p")
    out = run_pass(make_pass("contraction-tiling"), guarded_late.encode(), "opencl")
    assert isinstance(out, Refused)
    racing = GEMM_NT_CL.replace("float sum = 0.0f;", "float sum = get_local_id(0);")
    out = run_pass(make_pass("contraction-tiling"), racing.encode(), "opencl")
    assert isinstance(out, Refused) and "use no thread index" in out.reason


@pytest.mark.slow
@needs_nvcc
def test_unguarded_contraction_cuda_compiles(tmp_path: Path) -> None:
    cuda = GEMM_NT_CL.replace("__kernel", "__global__").replace("__global const", "const").replace("__global ", "")
    cuda = cuda.replace("get_global_id(0)", "blockIdx.x * blockDim.x + threadIdx.x")
    cuda = cuda.replace("get_global_id(1)", "blockIdx.y * blockDim.y + threadIdx.y")
    files = []
    for opts in ({"tile": "32", "rows": "4"}, {"tile": "16", "rows": "1"}, {"tile": "64", "rows": "8"}):
        out = run_pass(make_pass("contraction-tiling", opts), cuda.encode(), "cuda")
        assert isinstance(out, Applied) and out.launch is None, out
        files.append(tmp_path / f"nt_{opts['tile']}.cu")
        files[-1].write_bytes(out.text)
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_umul24_index_is_a_global_index() -> None:
    src = b"""__global__ void k(float* o) {
    unsigned int xi = __umul24(blockIdx.x, blockDim.x) + threadIdx.x;
    unsigned int yi = __umul24(blockIdx.y, blockDim.y) + threadIdx.y;
    o[__umul24(gridDim.x, blockDim.x) * yi + xi] = 1.0f;
}"""
    m = kernel_model(src, "cuda")
    assert m is not None and m.var_for("x") == "xi" and m.var_for("y") == "yi"
    assert m.accesses[0].pattern == "coalesced"


# every grid point sums over a table that does not depend on the point; no guard, the row pitch from the grid
ENERGY_CL = """\
__kernel void grid_energy(int natoms, float spacing, __global float* grid, __global const float* atoms)
{
    unsigned int xi = get_global_id(0);
    unsigned int yi = get_global_id(1);
    unsigned int at = get_global_size(0) * yi + xi;
    const float px = spacing * xi;
    float py = spacing * yi;
    int a;
    float e = 0.0f;
    for (a = 0; a < natoms; a++) {
        float dx = px - atoms[4 * a];
        float dy = py - atoms[4 * a + 1];
        e += atoms[4 * a + 3] / sqrt(dx * dx + dy * dy + atoms[4 * a + 2]);
    }
    grid[at] += e;
}
"""
GX, GY, ATOMS = 80, 12, 37  # 5 x 3 work-groups of 16 x 4: no factor divides 5


def _energy_state(mep: Path):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    params = [ParamSpec("natoms", "int", "scalar", "int", value=ATOMS), ParamSpec("spacing", "float", "scalar", "float", value=0.1),
              ParamSpec("grid", "__global float*", "inout", "float", count=GX * GY, space="global"),
              ParamSpec("atoms", "__global const float*", "in", "float", count=4 * ATOMS, space="global", low=0.5, high=1.0)]
    make_mep(mep, ENERGY_CL, manifest("grid_energy", "opencl", "kernel.cl", params, (GX, GY, 1), (16, 4, 1), repetitions=3,
                                      warmup=1, timeout_s=60.0))
    src = ENERGY_CL.encode()
    return State(manifest=load(mep), original=src, kernel="grid_energy", dialect="opencl",
                 facts=kernel_facts(src, "opencl", "grid_energy"))


def test_jam_shares_the_loop_and_keeps_the_launch() -> None:
    out = run_pass(make_pass("thread-coarsen", {"axis": "x", "factor": "4", "jam": "1"}), ENERGY_CL.encode(), "opencl")
    assert isinstance(out, Applied), out
    assert out.launch is None
    text = out.text.decode()
    assert "if (get_group_id(0) * 4 >= get_num_groups(0)) return;" in text
    assert "xi[cx] = (get_group_id(0) * 4 + cx) * get_local_size(0) + get_local_id(0);" in text
    assert "float px[4];" in text and "px[cx] = spacing * xi[cx];" in text  # const dropped: assigned per point
    # one atom loop for the four points, each table element loaded once per iteration
    assert text.count("for (a = 0; a < natoms; a++)") == 1 and "e[cx] += atoms[4 * a + 3]" in text
    assert "if (get_group_id(0) * 4 + cx < get_num_groups(0)) {" in text and "grid[at[cx]] += e[cx];" in text


@pytest.mark.parametrize("change,why", [
    ("grid[at] += e;", "grid[at] += e; grid[at + 1] = 0.0f;"),  # a point writes its neighbour's element
    ("float dx = px - atoms[4 * a];", "float dx = px - atoms[4 * a] + get_local_id(0);"),  # the thread's x beyond the index
    ("for (a = 0; a < natoms; a++) {", "for (a = 0; a < natoms + xi; a++) {"),  # a loop that differs per point
    ("int a;\n", "int a;\n    float e2 = 0.0f;\n    for (int b = 0; b < 2; ++b) e2 += 1.0f;\n"),  # two loops
])
def test_jam_refusals(change: str, why: str) -> None:
    src = ENERGY_CL.replace(change, why)
    assert src != ENERGY_CL
    out = run_pass(make_pass("thread-coarsen", {"axis": "x", "factor": "4", "jam": "1"}), src.encode(), "opencl")
    assert isinstance(out, Refused), out.text.decode() if isinstance(out, Applied) else out


@pytest.mark.slow
@pytest.mark.parametrize("pipeline", ["thread-coarsen{axis=x factor=4 jam=1}", "thread-coarsen{axis=x factor=8 jam=1}",
                                      "thread-coarsen{axis=y factor=2 jam=1}"])
def test_jam_matches_the_original_on_pocl(tmp_path: Path, pipeline: str) -> None:
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _energy_state(tmp_path / "mep")
    cand = apply_pipeline(pipeline, state)
    assert isinstance(cand, Candidate), cand
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)


@pytest.mark.slow
def test_a_jam_without_its_tail_guard_is_caught_on_pocl(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _energy_state(tmp_path / "mep")
    cand = apply_pipeline("thread-coarsen{axis=x factor=4 jam=1}", state)
    assert isinstance(cand, Candidate), cand
    broken = cand.source.replace(b"if (get_group_id(0) * 4 + cx < get_num_groups(0)) {", b"if (1) {")
    assert broken != cand.source
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict != "ok"
