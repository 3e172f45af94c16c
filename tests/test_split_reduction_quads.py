"""split-reduction{quad=4} (passes/reductions/_column_quads.py; issue 15: gemv_cols and gemv_colmajor at 68% / 64% of the copy
bandwidth with 16 scalar outputs a block): four adjacent outputs a thread read in float4 words. The zoo kernels'
rewrites run threaded on the CPU against the originals (tests/emulate_cuda_block.py) with aligned rows (the float4
path) and odd row lengths or buffers off a 16-byte boundary (the scalar path), mutants that must fail, refusals, the
search space's order, nvcc -arch=sm_90 on both rewritten zoo kernels."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from emulate_cuda import Launch
from emulate_cuda_block import same_outputs
from session_builds import nvcc_checks

from s2s.lang.edits import Refused
from s2s.optimize.registry import Applied, build_pipeline, run_pass, search_space

ZOO = ROOT / "bench" / "zoo"
QUAD = "split-reduction{splits=64 cols=8 quad=4}"
DEEP = "split-reduction{splits=128 cols=4 quad=4}"  # 16 outputs a block, as the measured scalar 32 x 16
SMALL = "split-reduction{splits=4 cols=8 quad=4}"  # a few rows per split at the emulated sizes


def _apply(pipeline: str, source: bytes, kernel: str, dialect: str = "cuda") -> Applied | Refused:
    return run_pass(build_pipeline(pipeline)[0], source, dialect, kernel)  # type: ignore[return-value]


def _gemv_cols(rows: int, cols: int) -> bytes:
    src = (ZOO / "gemv_cols" / "gemv_cols.cu").read_text()
    return src.replace("#define NROWS 4096", f"#define NROWS {rows}").replace("#define NCOLS 4096", f"#define NCOLS {cols}").encode()


def test_quads_shape_the_launch_and_the_loads() -> None:
    """4096 columns: 1024 quad threads in blocks of 8 quads x 64 splits (128 blocks of 512 threads); one float4 of A per
    row, x[i] once per term, partials in a [64][32] array added in order; gemv_colmajor reads its macro's words."""
    out = _apply(QUAD, (ZOO / "gemv_cols" / "gemv_cols.cu").read_bytes(), "gemv_cols")
    assert isinstance(out, Applied) and out.launch is not None
    assert out.launch.resolve((32, 1, 1), (128, 1, 1)) == ((128, 1, 1), (8, 64, 1))
    text = out.text.decode()
    assert "int j4 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;" in text and "__shared__ float red[64][32];" in text
    assert "const float4 w0 = *reinterpret_cast<const float4*>(&A[(i) * NCOLS + (j4)]);" in text
    assert "part2 += w0.z * x[i];" in text and "part3 += red[off][4 * threadIdx.x + 3];" in text and "i += 64)" in text
    col = _apply(QUAD, (ZOO / "gemv_colmajor" / "gemv_colmajor.cu").read_bytes(), "gemv_colmajor")
    assert isinstance(col, Applied) and b"reinterpret_cast<const float4*>(&a[(((j))) * LDA + (((i4)))])" in col.text
    assert b"part1 += w0.y * x[j];" in col.text and b"alpha * acc + beta * y[i]" in col.text
    deep = _apply(DEEP, (ZOO / "gemv_cols" / "gemv_cols.cu").read_bytes(), "gemv_cols")
    assert isinstance(deep, Applied) and deep.launch is not None and b"red[128][16];" in deep.text
    assert deep.launch.resolve((32, 1, 1), (128, 1, 1)) == ((256, 1, 1), (4, 128, 1))


def test_quads_refusals() -> None:
    """A row walk (the output index is not the unit stride: gemv_rows forced into splits mode), OpenCL, quad=3."""
    rows = (ZOO / "gemv_rows" / "gemv_rows.cu").read_bytes()
    out = _apply("split-reduction{mode=splits quad=4}", rows, "gemv_rows")
    assert isinstance(out, Refused) and "quad=4 needs CUDA" in out.reason, out
    cl = b"""__kernel void cols(__global const float* A, __global const float* x, __global float* y, int n)
{
    int j = get_global_id(0);
    if (j < n) {
        float acc = 0.0f;
        for (int i = 0; i < n; i++)
            acc += A[i * n + j] * x[i];
        y[j] = acc;
    }
}
"""
    got = _apply("split-reduction{quad=4}", cl, "cols", "opencl")
    assert isinstance(got, Refused) and "quad=4 needs CUDA" in got.reason, got
    assert isinstance(run_pass(build_pipeline("split-reduction{quad=4}")[0], cl, "opencl", "cols"), Refused)
    bad = _apply("split-reduction{quad=3}", (ZOO / "gemv_cols" / "gemv_cols.cu").read_bytes(), "gemv_cols")
    assert isinstance(bad, Refused) and "quad 1 or 4" in bad.reason


def test_the_search_tries_quads_first() -> None:
    """Round one reaches the cluster form first (tests/test_split_reduction_cluster.py), then the float4 form, the measured
    16 x 32 scalar form (68% on the H200), 4 quads by 128 splits; 4 quads a block only with quad=4."""
    mine = [s for s in search_space() if s.startswith("split-reduction")]
    assert mine[1:4] == [QUAD, "split-reduction{splits=32 cols=16}", DEEP]
    src = (ZOO / "gemv_cols" / "gemv_cols.cu").read_bytes()
    bad = _apply("split-reduction{splits=128 cols=4}", src, "gemv_cols")
    assert isinstance(bad, Refused) and "4 with quad=4" in bad.reason


@pytest.mark.slow
@pytest.mark.parametrize(("rows", "cols", "offset"), [(77, 48, 0), (77, 45, 0), (77, 48, 1)])
def test_gemv_cols_quads_match(tmp_path: Path, rows: int, cols: int, offset: int) -> None:
    """77 rows (not a multiple of the splits) by 48 columns (12 quads, the second block half empty): the float4 path,
    whose mutants (two lanes of a word swapped, a split stepping half the rows, the last partial left out) fail. 45
    columns (misaligned rows, a last quad of one column) or buffers one float off 16 bytes: the scalar path, where the
    swapped-word mutant changes nothing (proof the float4 path was not taken)."""
    src = _gemv_cols(rows, cols)
    out = _apply(SMALL, src, "gemv_cols")
    assert isinstance(out, Applied) and out.launch is not None
    grid, block = (1, 1, 1), (128, 1, 1)
    g, b = out.launch.resolve(grid, block)
    assert b == (8, 4, 1) and g == (4, 1, 1)  # 128 threads launched: 32 quads
    launches = (Launch(grid, block), Launch(g, b))
    counts = {"A": rows * cols, "x": rows, "y": cols}
    assert same_outputs(tmp_path, "gemv_cols", src, out.text, launches, counts, {}, 1e-5, offset) == "SAME"
    swapped = out.text.replace(b"part1 += w0.y", b"part1 += w0.z")
    assert swapped != out.text
    fast = cols % 4 == 0 and offset == 0
    assert (same_outputs(tmp_path, "gemv_cols", src, swapped, launches, counts, {}, 1e-5, offset) == "SAME") is not fast
    if fast:
        for broken in (out.text.replace(b"off < 4;", b"off < 3;"), out.text.replace(b"i += 4) {", b"i += 2) {")):
            assert broken != out.text
            assert same_outputs(tmp_path, "gemv_cols", src, broken, launches, counts, {}, 1e-5) != "SAME"


@pytest.mark.slow
@pytest.mark.parametrize("m", [48, 45])
def test_gemv_colmajor_quads_match(tmp_path: Path, m: int) -> None:
    """gemv_colmajor (y = alpha A x + beta y, A column-major behind a macro) at m rows, n = 77: 48 takes the float4
    path (a swapped word fails), 45 (columns off 16 bytes) the scalar one."""
    src = (ZOO / "gemv_colmajor" / "gemv_colmajor.cu").read_bytes().replace(b"#define M 4096", f"#define M {m}".encode())
    out = _apply(SMALL, src, "gemv_colmajor")
    assert isinstance(out, Applied) and out.launch is not None
    grid, block = (1, 1, 1), (128, 1, 1)
    launches = (Launch(grid, block), Launch(*out.launch.resolve(grid, block)))
    counts = {"a": m * 77, "x": 77, "y": m}
    scalars = {"m": str(m), "n": "77", "alpha": "0.75f", "beta": "0.25f"}
    assert same_outputs(tmp_path, "gemv_colmajor", src, out.text, launches, counts, scalars, 1e-5) == "SAME"
    swapped = out.text.replace(b"part0 += w0.x", b"part0 += w0.w")
    assert swapped != out.text
    assert (same_outputs(tmp_path, "gemv_colmajor", src, swapped, launches, counts, scalars, 1e-5) == "SAME") is (m == 45)


@pytest.mark.slow
@needs_nvcc
def test_rewritten_zoo_kernels_compile(tmp_path: Path) -> None:
    files = []
    for name in ("gemv_cols", "gemv_colmajor"):
        for n, pipeline in enumerate((QUAD, DEEP)):
            out = _apply(pipeline, (ZOO / name / f"{name}.cu").read_bytes(), name)
            assert isinstance(out, Applied), out
            files.append(tmp_path / f"{name}_{n}.cu")
            files[-1].write_bytes(out.text.replace(b'"../zoo.h"', f'"{ZOO / "zoo.h"}"'.encode()))
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]
