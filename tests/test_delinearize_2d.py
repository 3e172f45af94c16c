"""delinearize-2d: a flat index split by / and % becomes a 2-D (3-D with a batch) launch that the tilings then tile.

Real runs on PoCL against the original at sizes no block divides, nvcc builds of the composed CUDA output, the
launch rule at the MEP's sizes and at a launch site of the zoo's own application after reintegration.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from mep_util import ParamSpec, make_mep, manifest
from session_builds import nvcc_checks

from s2s.lang.edits import LaunchChange, Refused, extents
from s2s.lang.kernel_facts import kernel_facts
from s2s.optimize.candidate import Candidate
from s2s.optimize.registry import Applied, build_pipeline, make_pass, run_pass, search_space

ZOO = ROOT / "bench" / "zoo"

GEMM_CM_CL = """\
#define IDX2C(i, j, ld) ((j) * (ld) + (i))

__kernel void gemm_cm(__global const float* A, __global const float* B, __global float* C, int m, int n, int k)
{
    int t = get_global_id(0);
    int i = t % m;
    int j = t / m;
    if (j >= n)
        return;
    float s = 0.0f;
    for (int p = 0; p < k; p++)
        s += A[IDX2C(i, p, m)] * B[IDX2C(p, j, k)];
    C[IDX2C(i, j, m)] = s;
}
"""
SYRK_LOWER_CL = """\
__kernel void syrk_lower(float alpha, float beta, __global const float* a, __global float* c, int n, int k)
{
    int idx = get_global_id(0);
    int i = idx / n;
    int j = idx % n;
    if (i < n && j <= i) {
        c[i * n + j] *= beta;
        for (int p = 0; p < k; p++)
            c[i * n + j] += alpha * a[i * k + p] * a[j * k + p];
    }
}
"""
BATCHED_CL = """\
__kernel void batched_mm(__global const float* A, __global const float* B, __global float* C, int batch, int dim)
{
    int t = get_global_id(0);
    if (t < batch * dim * dim) {
        int b = t / (dim * dim);
        int r = (t / dim) % dim;
        int c = t % dim;
        float s = 0.0f;
        for (int k = 0; k < dim; k++)
            s += A[(b * dim + r) * dim + k] * B[(b * dim + k) * dim + c];
        C[(b * dim + r) * dim + c] = s;
    }
}
"""
M, N, K, BATCH, DIM = 70, 50, 45, 37, 5


def _params(kernel: str) -> list[ParamSpec]:
    g = "__global const float*"
    if kernel == "gemm_cm":
        return [ParamSpec("A", g, "in", "float", count=M * K, space="global"), ParamSpec("B", g, "in", "float", count=K * N, space="global"),
                ParamSpec("C", "__global float*", "out", "float", count=M * N, space="global"),
                ParamSpec("m", "int", "scalar", "int", value=M), ParamSpec("n", "int", "scalar", "int", value=N),
                ParamSpec("k", "int", "scalar", "int", value=K)]
    if kernel == "syrk_lower":
        return [ParamSpec("alpha", "float", "scalar", "float", value=1.5), ParamSpec("beta", "float", "scalar", "float", value=-0.5),
                ParamSpec("a", g, "in", "float", count=M * K, space="global"),
                ParamSpec("c", "__global float*", "inout", "float", count=M * M, space="global"),
                ParamSpec("n", "int", "scalar", "int", value=M), ParamSpec("k", "int", "scalar", "int", value=K)]
    size = BATCH * DIM * DIM
    return [ParamSpec("A", g, "in", "float", count=size, space="global"), ParamSpec("B", g, "in", "float", count=size, space="global"),
            ParamSpec("C", "__global float*", "out", "float", count=size, space="global"),
            ParamSpec("batch", "int", "scalar", "int", value=BATCH), ParamSpec("dim", "int", "scalar", "int", value=DIM)]


THREADS = {"gemm_cm": M * N, "syrk_lower": M * M, "batched_mm": BATCH * DIM * DIM}


def _state(src: str, kernel: str, mep: Path):  # type: ignore[no-untyped-def]
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    flat = -(-THREADS[kernel] // 64) * 64  # the 1-D launch: global work-items rounded up to the work-group
    make_mep(mep, src, manifest(kernel, "opencl", "kernel.cl", _params(kernel), (flat, 1, 1), (64, 1, 1),
                                repetitions=3, warmup=1, timeout_s=60.0))
    return State(manifest=load(mep), original=src.encode(), kernel=kernel, dialect="opencl", facts=kernel_facts(src.encode(), "opencl", kernel))


def _evaluate(mep: Path, state, cand: Candidate):  # type: ignore[no-untyped-def]
    from s2s.mep.evaluate import evaluate
    from s2s.optimize.loop import write_variant

    write_variant(mep, state.manifest.kernel_file, cand)
    return evaluate(mep, cand.id)


# -- the launch rule ------------------------------------------------------------------------------
def test_extent_rule_launches_the_kernel_sizes() -> None:
    rule = LaunchChange((32, 8, 1), "extent:n|m")
    # 1000 x 100 outputs from 391 blocks of 256 threads: now 32 x 13 blocks of 32 x 8
    assert rule.resolve((391, 1, 1), (256, 1, 1), values={"m": 100, "n": 1000}) == ((32, 13, 1), (32, 8, 1))
    assert extents("extent:8|8|262144", {}) == (8, 8, 262144)
    assert extents("extent:dim|dim|batch", {"dim": 5, "batch": 37}) == (5, 5, 37)
    assert extents("extent:n|m", {"n": 10, "m": "FILL-IN"}) is None  # an unknown size is never guessed
    with pytest.raises(ValueError, match="needs the values"):
        rule.resolve((391, 1, 1), (256, 1, 1))
    with pytest.raises(ValueError, match="exceeds 65535"):  # a batch of 262144 in blocks of depth 1: no such CUDA grid
        LaunchChange((8, 8, 1), "extent:8|8|262144").resolve((1, 1, 1), (256, 1, 1))


def test_compile_time_sizes_are_the_files_own() -> None:
    from s2s.lang.index_split import int_macros

    text = b"#define N 2048 // rows\n#define K (N * 2) /* c */\n#ifndef M\n#define M 64\n#endif\n#define T 4\n#define T 8\n#define F 1.5f\n"
    assert int_macros(text) == {"N": 2048, "K": 4096}  # M may come from -D, T is defined twice, F is no integer


def test_launch_site_sizes_come_from_its_arguments() -> None:
    from s2s.reintegrate.launch_sites import _site_extents

    assert _site_extents("extent:m|n", ["A", "m", "n"], ("dA", "rows", "2 * cols")) == ["(rows)", "(2 * cols)", "1"]
    assert _site_extents("extent:m|n", ["A", "m", "n"], ("dA", "rows++", "cols")) is None  # never evaluated twice
    assert _site_extents("extent:m|n", ["A", "m", "n"], ("dA", "rows")) is None  # arguments that do not line up


def test_search_space_composes_with_the_tilings() -> None:
    space = search_space()
    assert "delinearize-2d" in space and "delinearize-2d,contraction-tiling{tile=32 rows=4}" in space
    assert space.index("delinearize-2d") < space.index("contraction-tiling{tile=32 rows=4}")


# -- the zoo's 1-D kernels ------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel,x,rule", [("gemm_colmajor", "i", "extent:m|n"), ("syrk_lower", "j", "extent:2048|2048"),
                                           ("batched_gemm8", "col", "extent:8|8|262144")])
def test_zoo_kernels_are_split(kernel: str, x: str, rule: str) -> None:
    src = (ZOO / kernel / f"{kernel}.cu").read_bytes()
    block = {"block": "8x8x8"} if kernel == "batched_gemm8" else {}
    out = run_pass(make_pass("delinearize-2d", block), src, "cuda", kernel)
    assert isinstance(out, Applied), out
    assert f"int {x} = blockIdx.x * blockDim.x + threadIdx.x;".encode() in out.text  # the unit-stride digit on x
    assert out.launch is not None and out.launch.grid_from == rule
    facts = kernel_facts(out.text, "cuda", kernel)
    assert facts is not None and facts.dims == (3 if kernel == "batched_gemm8" else 2)


def test_a_block_wider_than_the_split_is_refused() -> None:
    src = (ZOO / "batched_gemm8" / "batched_gemm8.cu").read_bytes()  # 8 columns per matrix: 24 of 32 lanes would idle
    out = run_pass(make_pass("delinearize-2d"), src, "cuda", "batched_gemm8")
    assert isinstance(out, Refused) and "x: 8 outputs, blocks of 32" in out.reason


@pytest.mark.parametrize("kernel", ["gemm_colmajor", "syrk_lower"])
def test_zoo_kernels_tile_only_after_the_split(kernel: str) -> None:
    src = (ZOO / kernel / f"{kernel}.cu").read_bytes()
    assert isinstance(run_pass(make_pass("contraction-tiling"), src, "cuda", kernel), Refused)
    text = src
    for p in build_pipeline("delinearize-2d,contraction-tiling{tile=32 rows=4}"):
        out = run_pass(p, text, "cuda", kernel)
        assert isinstance(out, Applied), out
        text = out.text
    assert b"__shared__ float As[32][33];" in text and b"blockIdx.y * 32" in text


def test_apply_pipeline_resolves_the_launch_from_the_mep_scalars(tmp_path: Path) -> None:
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _state(GEMM_CM_CL, "gemm_cm", tmp_path / "mep")
    cand = apply_pipeline("delinearize-2d", state)
    assert isinstance(cand, Candidate) and cand.launch is not None, cand
    # OpenCL global sizes: m = 70 rows on x in groups of 32, n = 50 columns on y in groups of 8
    assert cand.launch.grid == (96, 56, 1) and cand.launch.block == (32, 8, 1) and cand.launch_rules == ("extent:m|n",)
    tiled = apply_pipeline("delinearize-2d,contraction-tiling{tile=16 rows=2}", state)
    assert isinstance(tiled, Candidate) and tiled.launch is not None, tiled
    # 16 x 16 tiles over the 96 x 56 threads of the split, 16 x 8 work-items each
    assert tiled.launch.grid == (96, 32, 1) and tiled.launch_rules == ("extent:m|n", "tile-coarse")


# -- correctness on PoCL ------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("src,kernel,pipeline", [
    (GEMM_CM_CL, "gemm_cm", "delinearize-2d"), (GEMM_CM_CL, "gemm_cm", "delinearize-2d,contraction-tiling{tile=16 rows=2}"),
    (SYRK_LOWER_CL, "syrk_lower", "delinearize-2d{block=16x16}"),
    (SYRK_LOWER_CL, "syrk_lower", "delinearize-2d,contraction-tiling{tile=16 rows=2}"),
    (BATCHED_CL, "batched_mm", "delinearize-2d{block=8x8x4}")])
def test_matches_the_original_on_pocl(tmp_path: Path, src: str, kernel: str, pipeline: str) -> None:
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _state(src, kernel, tmp_path / "mep")
    cand = apply_pipeline(pipeline, state)
    assert isinstance(cand, Candidate) and cand.launch is not None, cand
    assert cand.launch.grid[1] > 1 and b"get_global_id(1)" in cand.source or b"get_group_id(1)" in cand.source
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    assert m.outputs and all(o.ok for o in m.outputs) and m.input_sets >= 2


@pytest.mark.slow
def test_a_wrong_split_is_caught_on_pocl(tmp_path: Path) -> None:
    """Not vacuous: the digits read from the wrong axes leave outputs unwritten and write others twice."""
    pytest.importorskip("pyopencl")
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _state(GEMM_CM_CL, "gemm_cm", tmp_path / "mep")
    cand = apply_pipeline("delinearize-2d", state)
    assert isinstance(cand, Candidate), cand
    broken = cand.source.replace(b"int i = get_global_id(0);", b"int i = get_global_id(1);")
    broken = broken.replace(b"int j = get_global_id(1);", b"int j = get_global_id(0);")
    assert broken != cand.source
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict != "ok"


# -- CUDA: the composed output builds, and reintegrates into the zoo's application --------------------------------
def _zoo_app(tmp: Path, kernel: str) -> Path:
    tree = tmp / "zoo"
    (tree / kernel).mkdir(parents=True)
    shutil.copy(ZOO / "zoo.h", tree / "zoo.h")
    shutil.copy(ZOO / kernel / f"{kernel}.cu", tree / kernel / f"{kernel}.cu")
    return tree


@pytest.mark.slow
@needs_nvcc
def test_composed_zoo_rewrites_compile(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    files = []
    for kernel, pipeline in [("gemm_colmajor", "delinearize-2d,contraction-tiling{tile=64 rows=8}"),
                             ("syrk_lower", "delinearize-2d,contraction-tiling{tile=32 rows=4}"),
                             ("fdtd_e", "delinearize-2d{block=16x16}"), ("transpose_gather", "delinearize-2d"),
                             ("batched_gemm8", "delinearize-2d{block=8x8x8}")]:
        tree = _zoo_app(tmp_path / f"{len(files)}", kernel)
        path = tree / kernel / f"{kernel}.cu"
        text = path.read_bytes()
        for p in build_pipeline(pipeline):
            out = run_pass(p, text, "cuda", kernel)
            assert isinstance(out, Applied), (pipeline, out)
            text = out.text
        path.write_bytes(text)
        files.append(path)
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.slow
@needs_nvcc
def test_reintegrated_launch_covers_the_sites_sizes(tmp_path: Path) -> None:
    from s2s.extract.mep_writer import make_mep as extract
    from s2s.mep.history import History
    from s2s.mep.manifest import load
    from s2s.optimize.loop import write_variant
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import apply_pipeline
    from s2s.reintegrate.splice import plan

    tree, mep = _zoo_app(tmp_path, "gemm_colmajor"), tmp_path / "mep"
    extract(str(tree), "gemm_colmajor", str(mep))
    m = load(mep)
    src = (mep / m.kernel_file).read_bytes()
    state = State(manifest=m, original=src, kernel="gemm_colmajor", dialect="cuda", facts=kernel_facts(src, "cuda", "gemm_colmajor"))
    cand = apply_pipeline("delinearize-2d,contraction-tiling{tile=32 rows=4}", state)
    assert isinstance(cand, Candidate) and cand.launch is not None, cand
    write_variant(mep, m.kernel_file, cand)
    hist = History(mep / "history.sqlite")
    hist.add(cand.id, 1, cand.origin, None, cand.source_sha, cand.launch.as_dict())
    hist.finish(cand.id, "ok", {"speedup": 2.0, "verdict": "ok"})
    hist.close()
    p = plan(mep, "best", str(tree))
    (path, (_old, new)), = p.files.items()
    assert not p.manual, p.manual
    # the grid from the site's own arguments (m = n = N), a tile of 32 x 32 outputs per 32 x 8 block
    assert b"gemm_colmajor<<<dim3(((N) + 31) / 32, (((N) * 1 + 3) / 4 + 7) / 8, 1), dim3(32, 8, 1)>>>" in new, new.decode()[-1500:]
    path.write_bytes(new)
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = subprocess.run([nvcc, "-arch=sm_90", "-o", str(tmp_path / "app"), str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
