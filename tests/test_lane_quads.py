"""Lanes that read their row in float4 words (issue 15: gemv_rows and row_sums at 57-58% of the copy bandwidth after
split-reduction): the zoo kernels' rewrites run threaded on the CPU against the originals (tests/emulate_cuda_block.py),
rows aligned and not, buffers on and off a 16-byte boundary, and mutants that must fail."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from emulate_cuda import Launch
from emulate_cuda_block import same_outputs
from session_builds import nvcc_checks

from s2s.optimize.registry import Applied, build_pipeline, run_pass

ZOO = ROOT / "bench" / "zoo"


def _apply(pipeline: str, source: bytes, kernel: str) -> Applied:
    out = None
    for p in build_pipeline(pipeline):
        out = run_pass(p, source, "cuda", kernel)
        assert isinstance(out, Applied), (pipeline, out)
        source = out.text
    assert out is not None
    return out


def _row_sums(rows: int, cols: int) -> bytes:
    src = (ZOO / "row_sums" / "row_sums.cu").read_text()
    return src.replace("#define ROWS 4096", f"#define ROWS {rows}").replace("#define COLS 4096", f"#define COLS {cols}").encode()


def test_split_reduction_reads_quads_and_keeps_the_scalar_loop_for_misaligned_rows() -> None:
    """gemv_rows: the row and x read through float4 words 128 elements a trip per warp, the rows that do not start on a
    16-byte boundary (n not a multiple of 4) in the original lanes loop; vec=1 keeps that loop alone."""
    src = (ZOO / "gemv_rows" / "gemv_rows.cu").read_bytes()
    text = _apply("split-reduction", src, "gemv_rows").text.decode()
    assert "const float4 w0 = *reinterpret_cast<const float4*>(&A[i * n + j]);" in text and "j += 128" in text
    assert "} else {\n            for (int j = (0) + lane; j < n; j += 32)" in text
    assert "float4" not in _apply("split-reduction{vec=1}", src, "gemv_rows").text.decode()
    csr = _apply("split-reduction", (ZOO / "spmv_csr" / "spmv_csr.cu").read_bytes(), "spmv_csr").text.decode()
    assert "part += w0.x * x[w1.x];" in csr  # x[cols[k]] gathered at cols' int4 words (tests/test_lane_gathers.py)


@pytest.mark.slow
@pytest.mark.parametrize("n,offset", [(204, 0), (203, 0), (204, 1)])
def test_gemv_rows_lanes_in_quads_match(tmp_path: Path, n: int, offset: int) -> None:
    """n = 204: every row aligned (51 quads, lanes 0-18 take two); n = 203: rows start aligned one time in four (both
    paths); offset 1: no row aligned. The same y within float rounding; a quad loop stepping one warp-width instead of
    four and a dropped lane of a quad are caught on the quad path, and at n = 203 a tail that every lane starts at the
    same element."""
    src = (ZOO / "gemv_rows" / "gemv_rows.cu").read_bytes()
    out = _apply("split-reduction", src, "gemv_rows")
    assert out.launch is not None
    grid, block = ((n + 255) // 256, 1, 1), (256, 1, 1)
    g, b = out.launch.resolve(grid, block, values={"n": n})
    launches = (Launch(grid, block), Launch(g, b))
    counts, scalars = {"A": n * n, "x": n, "y": n}, {"n": str(n)}
    assert same_outputs(tmp_path, "gemv_rows", src, out.text, launches, counts, scalars, 1e-5, offset) == "SAME"
    if offset == 0:
        mutants = [out.text.replace(b"j += 128", b"j += 32"), out.text.replace(b"part += w0.w * w1.w;", b"")]
        for broken in mutants + ([out.text.replace(b"j = j_end + lane", b"j = j_end")] if n % 4 else []):
            assert broken != out.text
            assert same_outputs(tmp_path, "gemv_rows", src, broken, launches, counts, scalars, 1e-5, offset) != "SAME"


@pytest.mark.slow
def test_row_sums_lanes_in_quads_match(tmp_path: Path) -> None:
    """row_sums with 40 rows of 1030 columns: even rows start aligned, odd ones do not; every sum matches."""
    src = _row_sums(40, 1030)
    out = _apply("split-reduction", src, "row_sums")
    assert out.launch is not None
    grid, block = (1, 1, 1), (64, 1, 1)
    g, b = out.launch.resolve(grid, block)
    launches = (Launch(grid, block), Launch(g, b))
    counts = {"m": 40 * 1030, "sums": 40}
    assert same_outputs(tmp_path, "row_sums", src, out.text, launches, counts, {}, 1e-5) == "SAME"
    broken = out.text.replace(b"part += w0.y;", b"part += w0.x;")
    assert broken != out.text
    assert same_outputs(tmp_path, "row_sums", src, broken, launches, counts, {}, 1e-5) != "SAME"


@pytest.mark.slow
def test_quads_compile(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    files = []
    for name in ("gemv_rows", "row_sums"):
        files.append(tmp_path / f"{name}.cu")
        data = _apply("split-reduction", (ZOO / name / f"{name}.cu").read_bytes(), name).text
        files[-1].write_bytes(data.replace(b'"../zoo.h"', f'"{ZOO / "zoo.h"}"'.encode()))
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("lanes,n", [(32, 203), (16, 204), (16, 203)])
def test_warp_rows_lanes_in_quads_match(tmp_path: Path, lanes: int, n: int) -> None:
    """warp-rows on gemv_rows, a warp or half a warp per row (two rows a warp, each half with its own shuffle mask):
    the same y; a quad loop that steps as if the row had 32 lanes when it has 16 is caught."""
    src = (ZOO / "gemv_rows" / "gemv_rows.cu").read_bytes()
    out = _apply(f"warp-rows{{lanes={lanes}}}", src, "gemv_rows")
    assert out.launch is not None and b"const float4 w1 = *reinterpret_cast<const float4*>(&x[j]);" in out.text
    grid, block = ((n + 255) // 256, 1, 1), (256, 1, 1)
    g, b = out.launch.resolve(grid, block, values={"n": n})
    launches = (Launch(grid, block), Launch(g, b))
    counts, scalars = {"A": n * n, "x": n, "y": n}, {"n": str(n)}
    assert same_outputs(tmp_path, "gemv_rows", src, out.text, launches, counts, scalars, 1e-5) == "SAME"
    if lanes == 16:
        broken = out.text.replace(b"j += 64", b"j += 128")
        assert broken != out.text
        assert same_outputs(tmp_path, "gemv_rows", src, broken, launches, counts, scalars, 1e-5) != "SAME"
