"""split-reduction{cluster=C} (passes/reductions/_cluster_columns.py; issue 15: gemv_cols and gemv_colmajor at 67% / 64% of the
copy bandwidth with 32 x 16 splits, a hand probe with clusters of 8 blocks at 72%): a column walk's splits spread over
the blocks of a thread-block cluster, summed through distributed shared memory. The zoo kernels' rewrites run threaded
on the CPU against the originals with the cluster's blocks at once (tests/emulate_cuda_cluster.py), on the float4
path and the scalar one, with mutants that must fail; the launch; the search's order; refusals (goldens
split_reduction_cluster_*); nvcc -arch=sm_90 on both rewritten zoo kernels, and the sm_80 build stopped by #error."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from emulate_cuda import Launch
from emulate_cuda_cluster import same_outputs
from session_builds import nvcc_checks

from s2s.lang.edits import Refused
from s2s.optimize.registry import Applied, build_pipeline, run_pass, search_space

ZOO = ROOT / "bench" / "zoo"
CLUSTER = "split-reduction{splits=8 cols=32 quad=4 cluster=8}"
SMALL = "split-reduction{splits=4 cols=8 quad=4 cluster=2}"  # 32-thread blocks: a few rows per split at the emulated sizes


def _apply(pipeline: str, source: bytes, kernel: str, dialect: str = "cuda") -> Applied | Refused:
    return run_pass(build_pipeline(pipeline)[0], source, dialect, kernel)  # type: ignore[return-value]


def _gemv_cols(rows: int, cols: int) -> bytes:
    src = (ZOO / "gemv_cols" / "gemv_cols.cu").read_text()
    return src.replace("#define NROWS 4096", f"#define NROWS {rows}").replace("#define NCOLS 4096", f"#define NCOLS {cols}").encode()


def test_cluster_shapes_the_launch_and_the_code() -> None:
    """4096 columns: 32 column groups of 128 (32 quads) by 8 blocks along y, one cluster each, 8 warps a block: the probe's
    256 blocks of 256 threads; 8 rows' float4 words loaded before the adds; block 0 adds the 8 blocks' sums in rank order."""
    for name in ("gemv_cols", "gemv_colmajor"):
        out = _apply(CLUSTER, (ZOO / name / f"{name}.cu").read_bytes(), name)
        assert isinstance(out, Applied) and out.launch is not None, out
        assert out.launch.resolve((32, 1, 1), (128, 1, 1)) == ((32, 8, 1), (32, 8, 1))
        text = out.text.decode()
        assert f"__global__ void __cluster_dims__(1, 8, 1) __launch_bounds__(256, 4) {name}(" in text
        assert "__CUDA_ARCH__ < 900" in text and "__cluster_map_shared_rank(blk, rank))[col];" in text
        assert text.count("reinterpret_cast<const float4*>") == 9 and text.count("__cluster_barrier_wait();") == 2
    col = _apply(CLUSTER, (ZOO / "gemv_colmajor" / "gemv_colmajor.cu").read_bytes(), "gemv_colmajor")
    assert isinstance(col, Applied) and b"const float4 w0_7 = *reinterpret_cast<const float4*>(&a[(((j0 + 56))) * LDA + (((i4)))]);" in col.text
    assert b"int i = 4 * (blockIdx.x * blockDim.x + (col / 4)) + col % 4;" in col.text
    odd = _apply(CLUSTER, _gemv_cols(4096, 4100), "gemv_cols")  # a last group of one quad: 33 groups
    assert isinstance(odd, Applied) and odd.launch is not None and odd.launch.resolve((33, 1, 1), (128, 1, 1))[0] == (33, 8, 1)


def test_cluster_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    """quad=1, lanes mode, a cluster of 3; an S2S_CUDA_ARCH below sm_90 (OpenCL, HIP, a declared __launch_bounds__, a row
    walk and double elements: goldens split_reduction_cluster_refuse_*)."""
    src = (ZOO / "gemv_cols" / "gemv_cols.cu").read_bytes()
    for pipeline, why in (("split-reduction{cluster=8}", "cluster needs quad=4"), ("split-reduction{mode=lanes quad=4 cluster=8}", "cluster needs quad=4"),
                          ("split-reduction{quad=4 cluster=3}", "cluster 1, 2, 4 or 8")):
        out = _apply(pipeline, src, "gemv_cols")
        assert isinstance(out, Refused) and why in out.reason, (pipeline, out)
    monkeypatch.setenv("S2S_CUDA_ARCH", "sm_80")
    out = _apply(CLUSTER, src, "gemv_cols")
    assert isinstance(out, Refused) and "sm_90 or newer (S2S_CUDA_ARCH is sm_80)" in out.reason
    monkeypatch.setenv("S2S_CUDA_ARCH", "9.0")
    assert isinstance(_apply(CLUSTER, src, "gemv_cols"), Applied)


def test_the_search_tries_the_cluster_first(tmp_path: Path) -> None:
    """The cluster form is the pass's first space entry, and round one proposes it first for gemv_cols and gemv_colmajor
    (the cost model reads its float4 words as strided: cost.CLUSTER_FIRST); it refuses gemv_rows (a row walk)."""
    from test_fast_math import _zoo_state

    from s2s.optimize.proposers.builtin import BuiltinProposer

    assert [s for s in search_space() if s.startswith("split-reduction")][0] == CLUSTER
    for kernel in ("gemv_cols", "gemv_colmajor"):
        state = _zoo_state(kernel, tmp_path / kernel)
        state.round = 1
        assert [c.origin for c in BuiltinProposer().propose(state)][0] == f"pass:{CLUSTER}", kernel
    rows = _apply(CLUSTER, (ZOO / "gemv_rows" / "gemv_rows.cu").read_bytes(), "gemv_rows")
    assert isinstance(rows, Refused) and "walks along k" in rows.reason


@pytest.mark.slow
@pytest.mark.parametrize(("pipeline", "rows", "cols", "offset"), [(SMALL, 77, 48, 0), (SMALL, 77, 45, 0), (SMALL, 77, 48, 1),
                                                                  (CLUSTER, 600, 136, 0)])
def test_gemv_cols_cluster_matches(tmp_path: Path, pipeline: str, rows: int, cols: int, offset: int) -> None:
    """77 rows (chunks of 39 and 38, not multiples of the 4 splits) by 48 columns (2 groups, the second half empty): the
    float4 path, whose mutants fail (two lanes of a word swapped, block 0 adding only its own sum, a batch stepping one
    row too few, a chunk one row short). 45 columns or buffers one float off 16 bytes: the scalar path (the swapped
    word changes nothing). The zoo's shape, 8 blocks of 8 warps, at 600 x 136: chunks of 75 rows, one batch of 64 and a
    remainder, 2 groups."""
    src = _gemv_cols(rows, cols)
    out = _apply(pipeline, src, "gemv_cols")
    assert isinstance(out, Applied) and out.launch is not None
    grid, block = (2, 1, 1), (128, 1, 1)
    launches = (Launch(grid, block), Launch(*out.launch.resolve(grid, block)))
    cluster = launches[1].grid[1]
    counts = {"A": rows * cols, "x": rows, "y": cols}
    assert same_outputs(tmp_path, "gemv_cols", src, out.text, launches, cluster, counts, {}, 1e-5, offset) == "SAME"
    fast = cols % 4 == 0 and offset == 0
    swapped = out.text.replace(b"part1 += w0_0.y", b"part1 += w0_0.z")
    assert swapped != out.text
    assert (same_outputs(tmp_path, "gemv_cols", src, swapped, launches, cluster, counts, {}, 1e-5, offset) == "SAME") is not fast
    if fast and pipeline == SMALL:
        for broken in (out.text.replace(b"(blk, rank))[col]", b"(blk, 0))[col]"), out.text.replace(b"i0 += 32", b"i0 += 31"),
                       out.text.replace(b"i_hi = i_lo + chunk", b"i_hi = i_lo + chunk - 1")):
            assert broken != out.text
            assert same_outputs(tmp_path, "gemv_cols", src, broken, launches, cluster, counts, {}, 1e-5) != "SAME"


@pytest.mark.slow
@pytest.mark.parametrize("m", [48, 45])
def test_gemv_colmajor_cluster_matches(tmp_path: Path, m: int) -> None:
    """gemv_colmajor (y = alpha A x + beta y, in-out y) at m rows, n = 77: 48 takes the float4 path (a swapped word
    fails), 45 the scalar one."""
    src = (ZOO / "gemv_colmajor" / "gemv_colmajor.cu").read_bytes().replace(b"#define M 4096", f"#define M {m}".encode())
    out = _apply(SMALL, src, "gemv_colmajor")
    assert isinstance(out, Applied) and out.launch is not None
    grid, block = (1, 1, 1), (128, 1, 1)
    launches = (Launch(grid, block), Launch(*out.launch.resolve(grid, block)))
    counts = {"a": m * 77, "x": 77, "y": m}
    scalars = {"m": str(m), "n": "77", "alpha": "0.75f", "beta": "0.25f"}
    assert same_outputs(tmp_path, "gemv_colmajor", src, out.text, launches, 2, counts, scalars, 1e-5) == "SAME"
    swapped = out.text.replace(b"part0 += w0_0.x", b"part0 += w0_0.w")
    assert swapped != out.text
    assert (same_outputs(tmp_path, "gemv_colmajor", src, swapped, launches, 2, counts, scalars, 1e-5) == "SAME") is (m == 45)


@pytest.mark.slow
@needs_nvcc
def test_rewritten_zoo_kernels_compile(tmp_path: Path) -> None:
    """Both zoo kernels' cluster forms build for sm_90 without warnings; for sm_80 the #error stops the build with why."""
    files = []
    for name in ("gemv_cols", "gemv_colmajor"):
        out = _apply(CLUSTER, (ZOO / name / f"{name}.cu").read_bytes(), name)
        assert isinstance(out, Applied), out
        files.append(tmp_path / f"{name}.cu")
        files[-1].write_bytes(out.text.replace(b'"../zoo.h"', f'"{ZOO / "zoo.h"}"'.encode()))
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    old = subprocess.run([nvcc, "-c", "-arch=sm_80", str(files[0]), "-o", str(tmp_path / "old.o")], capture_output=True, text=True, timeout=300)
    assert old.returncode != 0 and "thread-block clusters need CUDA on sm_90 or newer" in old.stderr
