"""The passes derived from the kernel model: real runs on PoCL against the original, nvcc builds of the CUDA output.

Sizes divide by none of the tiles, operands come in both layouts, and results accumulate in global memory after
a scaling: the shapes a real dense-linear-algebra code has, written here from scratch.
"""
from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from mep_util import ParamSpec, make_mep, manifest
from session_builds import nvcc_checks

from s2s.lang.edits import Refused
from s2s.lang.kernel_facts import kernel_facts
from s2s.optimize.candidate import Candidate
from s2s.optimize.registry import Applied, make_pass, run_pass

pytestmark = pytest.mark.usefixtures("pocl_unoptimized")  # outputs compared, no timing asserted (conftest)

GOLDEN = ROOT / "tests" / "golden" / "passes"
NI, NJ, NK = 70, 50, 45

GEMM_CL = """\
__kernel void gemm(__global const float* a, __global const float* b, __global float* c, float alpha, float beta,
                   int ni, int nj, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if ((i < ni) && (j < nj)) {
        c[i * nj + j] *= beta;
        for (int k = 0; k < nk; k++) {
            c[i * nj + j] += alpha * a[i * nk + k] * b[k * nj + j];
        }
    }
}
"""
# a symmetric rank-k update: both operands from one matrix, the column side read along k (a[j][k])
SYRK_CL = """\
__kernel void syrk(__global const float* a, __global float* c, float alpha, float beta, int ni, int nj, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i >= ni || j >= nj) return;
    c[i * nj + j] *= beta;
    for (int k = 0; k < nk; ++k)
        c[i * nj + j] += alpha * a[i * nk + k] * a[j * nk + k];
}
"""
# C = A^T B, A stored k-major: the row side is loaded along i, not k
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
        c[i * nj + j] = alpha * s + beta * c[i * nj + j];
    }
}
"""

# a rank-2k update indexed through function-like macros: two operands on each side, accumulated into global memory
SYR2K_CL = """\
#define AM(r, s) a[(r) * nk + (s)]
#define BM(r, s) b[(r) * nk + (s)]
#define CM(r, s) c[(r) * nj + (s)]
__kernel void syr2k(__global const float* a, __global const float* b, __global float* c, float alpha, float beta,
                    int ni, int nj, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < ni && j < nj) {
        CM(i, j) *= beta;
        for (int k = 0; k < nk; k++)
            CM(i, j) += alpha * AM(j, k) * BM(i, k) + alpha * BM(j, k) * AM(i, k);
    }
}
"""


def _manifest(kernel: str, two_operands: bool):  # type: ignore[no-untyped-def]
    rows_a = NI * NK if kernel not in {"syrk", "syr2k"} else max(NI, NJ) * NK
    params = [ParamSpec("a", "__global const float*", "in", "float", count=rows_a, space="global")]
    if two_operands:
        params.append(ParamSpec("b", "__global const float*", "in", "float", count=max(NK * NJ, rows_a), space="global"))
    params += [ParamSpec("c", "__global float*", "inout", "float", count=NI * NJ, space="global"),
               ParamSpec("alpha", "float", "scalar", "float", value=1.5), ParamSpec("beta", "float", "scalar", "float", value=-0.5),
               ParamSpec("ni", "int", "scalar", "int", value=NI), ParamSpec("nj", "int", "scalar", "int", value=NJ),
               ParamSpec("nk", "int", "scalar", "int", value=NK)]
    return manifest(kernel, "opencl", "kernel.cl", params, (64, 80, 1), (16, 16, 1), repetitions=3, warmup=1, timeout_s=60.0)


def _state(src: str, kernel: str, mep: Path):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    make_mep(mep, src, _manifest(kernel, kernel != "syrk"))
    m = load(mep)
    return State(manifest=m, original=src.encode(), kernel=kernel, dialect="opencl", facts=kernel_facts(src.encode(), "opencl", kernel))


def _evaluate(mep: Path, state, cand: Candidate):  # type: ignore[no-untyped-def]
    from s2s.mep.evaluate import evaluate
    from s2s.optimize.loop import write_variant

    write_variant(mep, state.manifest.kernel_file, cand)
    return evaluate(mep, cand.id)


@pytest.mark.slow
@pytest.mark.parametrize("src,kernel", [(GEMM_CL, "gemm"), (SYRK_CL, "syrk"), (ATB_CL, "atb"), (SYR2K_CL, "syr2k")])
@pytest.mark.parametrize("pipeline", ["contraction-tiling{tile=16 rows=2}", "contraction-tiling{tile=32 rows=8}"])
def test_contraction_tiling_matches_the_original_on_pocl(tmp_path: Path, src: str, kernel: str, pipeline: str) -> None:
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _state(src, kernel, tmp_path / "mep")
    cand = apply_pipeline(pipeline, state)
    assert isinstance(cand, Candidate), cand
    tile = 16 if "tile=16" in pipeline else 32
    assert cand.launch is not None and cand.launch.block[0] == tile  # work-groups of tile x tile outputs covering 50 x 70
    assert cand.launch.grid[:2] == (-(-NJ // tile) * tile, -(-80 // tile) * cand.launch.block[1])
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    assert m.outputs and all(o.ok for o in m.outputs) and m.input_sets >= 1


@pytest.mark.slow
def test_a_wrong_tiling_is_caught_on_pocl(tmp_path: Path) -> None:
    """Not vacuous: the same rewrite without its last partial k tile gives wrong outputs."""
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _state(GEMM_CL, "gemm", tmp_path / "mep")
    cand = apply_pipeline("contraction-tiling{tile=16 rows=2}", state)
    assert isinstance(cand, Candidate), cand
    broken = cand.source.replace(b"t < nk; t += 16", b"t + 16 <= nk; t += 16")
    assert broken != cand.source
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict != "ok"


def test_refusals_say_why() -> None:
    bad = make_pass("contraction-tiling", {"tile": "64", "rows": "2"})
    out = run_pass(bad, GEMM_CL.encode(), "opencl")
    assert isinstance(out, Refused) and "1024 threads" in out.reason
    double = GEMM_CL.replace("float", "double")
    out = run_pass(make_pass("contraction-tiling", {"tile": "64", "rows": "8"}), double.encode(), "opencl")
    assert isinstance(out, Refused) and "48 KiB" in out.reason
    assert isinstance(run_pass(make_pass("contraction-tiling", {"tile": "32", "rows": "8"}), double.encode(), "opencl"), Applied)


@pytest.mark.slow
@needs_nvcc
def test_cuda_outputs_compile(tmp_path: Path) -> None:
    files = []
    for src, kernel in ((GEMM_CL, "gemm"), (SYRK_CL, "syrk"), (ATB_CL, "atb")):
        cuda = src.replace("__kernel", "__global__").replace("__global const", "const").replace("__global ", "")
        for i in range(2):
            j_map, i_map = ("blockIdx.x * blockDim.x + threadIdx.x", "threadIdx.y + blockDim.y * blockIdx.y")
            text = cuda.replace("get_global_id(0)", j_map).replace("get_global_id(1)", i_map)
            if i:
                text = text.replace("float", "double")
            out = run_pass(make_pass("contraction-tiling"), text.encode(), "cuda")
            assert isinstance(out, Applied), (kernel, out)
            files.append(tmp_path / f"{kernel}{i}.cu")
            files[-1].write_bytes(out.text)
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-4000:]


# -- inner-loop-threads: one thread per column, a triangular walk over a second column, a mirrored store ------------
COVAR_CL = """\
__kernel void covar(const int m, const int n, __global const float* data, __global float* symmat)
{
    int j1 = get_global_id(0) + 1;
    if (j1 <= m) {
        for (int j2 = j1; j2 <= m; j2++) {
            symmat[j1 * (m + 1) + j2] = 0.0f;
            for (int i = 1; i < n + 1; i++)
                symmat[j1 * (m + 1) + j2] += data[i * (m + 1) + j1] * data[i * (m + 1) + j2];
            symmat[j2 * (m + 1) + j1] = symmat[j1 * (m + 1) + j2];
        }
    }
}
"""
OUTER_CL = """\
__kernel void outer(__global const float* x, __global const float* y, __global float* out, const int n)
{
    int r = get_global_id(0);
    if (r >= n) return;
    for (int c = 0; c < n; ++c)
        out[c * n + r] = x[r] * y[c] + out[c * n + r];
}
"""
M, N = 45, 37


def _loop_state(src: str, kernel: str, mep: Path):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    if kernel == "covar":
        params = [ParamSpec("m", "const int", "scalar", "int", value=M), ParamSpec("n", "const int", "scalar", "int", value=N),
                  ParamSpec("data", "__global const float*", "in", "float", count=(N + 1) * (M + 1), space="global"),
                  ParamSpec("symmat", "__global float*", "inout", "float", count=(M + 1) * (M + 1), space="global")]
    else:
        params = [ParamSpec("x", "__global const float*", "in", "float", count=M, space="global"),
                  ParamSpec("y", "__global const float*", "in", "float", count=M, space="global"),
                  ParamSpec("out", "__global float*", "inout", "float", count=M * M, space="global"),
                  ParamSpec("n", "const int", "scalar", "int", value=M)]
    make_mep(mep, src, manifest(kernel, "opencl", "kernel.cl", params, (64, 1, 1), (64, 1, 1), repetitions=3, warmup=1, timeout_s=60.0))
    return State(manifest=load(mep), original=src.encode(), kernel=kernel, dialect="opencl", facts=kernel_facts(src.encode(), "opencl", kernel))


@pytest.mark.slow
@pytest.mark.parametrize("src,kernel,pipeline", [
    (COVAR_CL, "covar", "inner-loop-threads"), (COVAR_CL, "covar", "inner-loop-threads{block=16x16},contraction-tiling{tile=16 rows=2}"),
    (OUTER_CL, "outer", "inner-loop-threads")])
def test_inner_loop_threads_matches_the_original_on_pocl(tmp_path: Path, src: str, kernel: str, pipeline: str) -> None:
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _loop_state(src, kernel, tmp_path / "mep")
    cand = apply_pipeline(pipeline, state)
    assert isinstance(cand, Candidate), cand
    assert cand.launch is not None and cand.launch_rules[0] == "square-xy"
    rows = cand.launch.grid[1] // cand.launch.block[1] * (16 if "tiling" in pipeline else cand.launch.block[1])
    assert rows >= M  # the second column index now has threads (or tile rows) of its own
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    assert m.outputs and all(o.ok for o in m.outputs)


@pytest.mark.slow
def test_a_wrong_mapping_is_caught_on_pocl(tmp_path: Path) -> None:
    """Not vacuous: without the loop's upper bound in the guard, the extra y threads write past the matrix's rows.
    (Dropping the triangular bound instead is a benign race here: both threads of a mirrored pair store one value.)"""
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _loop_state(COVAR_CL, "covar", tmp_path / "mep")
    cand = apply_pipeline("inner-loop-threads", state)
    assert isinstance(cand, Candidate), cand
    broken = cand.source.replace(b" && j2 <= m", b"")
    assert broken != cand.source
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict != "ok"


def test_square_xy_launch_rule() -> None:
    from s2s.lang.edits import LaunchChange

    # 2048 columns, one thread each in blocks of 256: now 2048 x 2048 threads in 32 x 8 blocks
    assert LaunchChange((32, 8, 1), "square-xy").resolve((8, 1, 1), (256, 1, 1)) == ((64, 256, 1), (32, 8, 1))


# -- split-reduction: one thread per output walking a column (coalesced) or a row ---------------------------------
COLS_CL = (ROOT / "tests/golden/passes/split_reduction_columns_alpha_beta.cl").read_text().split("// ----- INPUT\n")[1].split("// -----")[0]
ROWS_CL = (ROOT / "tests/golden/passes/split_reduction_splits_opencl.cl").read_text().split("// ----- INPUT\n")[1].split("// -----")[0]
R, C = 77, 300


def _gemv_state(src: str, kernel: str, mep: Path):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    if kernel == "gemv_cols":  # y[j] over the n = C columns of an m = R row matrix
        params = [ParamSpec("A", "__global const float*", "in", "float", count=R * C, space="global"),
                  ParamSpec("x", "__global const float*", "in", "float", count=R, space="global"),
                  ParamSpec("y", "__global float*", "inout", "float", count=C, space="global"),
                  ParamSpec("alpha", "float", "scalar", "float", value=1.5), ParamSpec("beta", "float", "scalar", "float", value=0.5),
                  ParamSpec("m", "int", "scalar", "int", value=R), ParamSpec("n", "int", "scalar", "int", value=C)]
        grid = (320, 1, 1)
    else:
        params = [ParamSpec("A", "__global const float*", "in", "float", count=R * C, space="global"),
                  ParamSpec("v", "__global const float*", "in", "float", count=C, space="global"),
                  ParamSpec("out", "__global float*", "out", "float", count=R, space="global"),
                  ParamSpec("rows", "int", "scalar", "int", value=R), ParamSpec("cols", "int", "scalar", "int", value=C)]
        grid = (128, 1, 1)
    make_mep(mep, src, manifest(kernel, "opencl", "kernel.cl", params, grid, (64, 1, 1), repetitions=3, warmup=1, timeout_s=60.0))
    return State(manifest=load(mep), original=src.encode(), kernel=kernel, dialect="opencl", facts=kernel_facts(src.encode(), "opencl", kernel))


@pytest.mark.slow
@pytest.mark.parametrize("src,kernel,pipeline", [(COLS_CL, "gemv_cols", "split-reduction"), (COLS_CL, "gemv_cols", "split-reduction{splits=16}"),
                                                 (ROWS_CL, "rowdot", "split-reduction{mode=splits splits=4}")])
def test_split_reduction_matches_the_original_on_pocl(tmp_path: Path, src: str, kernel: str, pipeline: str) -> None:
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _gemv_state(src, kernel, tmp_path / "mep")
    cand = apply_pipeline(pipeline, state)
    assert isinstance(cand, Candidate), cand
    assert cand.launch is not None and cand.launch.block[0] == 32 and cand.launch.grid[0] == state.manifest.launch.grid[0]
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    assert m.outputs and all(o.ok for o in m.outputs)


@pytest.mark.slow
def test_a_wrong_split_is_caught_on_pocl(tmp_path: Path) -> None:
    """Not vacuous: leaving out the last partial sum gives wrong outputs."""
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _gemv_state(COLS_CL, "gemv_cols", tmp_path / "mep")
    cand = apply_pipeline("split-reduction", state)
    assert isinstance(cand, Candidate), cand
    broken = cand.source.replace(b"off < 8;", b"off < 7;")
    assert broken != cand.source
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict != "ok"


# the examples and CUDA goldens of these three passes compile: in test_passes.py::test_everything_compiles (one nvcc over
# every example and golden)
