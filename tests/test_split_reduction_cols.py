"""split-reduction's splits mode with fewer outputs a block (`cols`; issue 15: gemv_cols and gemv_colmajor at 41-44% of
the copy bandwidth with 32 outputs a block, 128 blocks for 132 SMs): the zoo kernels' rewrites run threaded on the CPU
against the originals at odd sizes (tests/emulate_cuda_block.py), the OpenCL form on PoCL, mutants that must fail, the
search space trying the new shapes, nvcc -arch=sm_90 on the rewritten zoo kernels."""
from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from emulate_cuda import Launch
from emulate_cuda_block import same_outputs
from session_builds import nvcc_checks

from s2s.lang.edits import Refused
from s2s.optimize.candidate import Candidate
from s2s.optimize.registry import Applied, build_pipeline, run_pass, search_space
from s2s.passes.reductions.split_reduction import SplitReduction

ZOO = ROOT / "bench" / "zoo"
NEW = ("split-reduction{splits=64 cols=8}", "split-reduction{splits=32 cols=16}")


def _apply(pipeline: str, source: bytes, kernel: str, dialect: str = "cuda") -> Applied:
    out = run_pass(build_pipeline(pipeline)[0], source, dialect, kernel)
    assert isinstance(out, Applied), (pipeline, out)
    return out


def _gemv_cols(rows: int, cols: int) -> bytes:
    src = (ZOO / "gemv_cols" / "gemv_cols.cu").read_text()
    return src.replace("#define NROWS 4096", f"#define NROWS {rows}").replace("#define NCOLS 4096", f"#define NCOLS {cols}").encode()


def test_cols_shape_the_block_and_the_partials() -> None:
    """8 outputs by 64 splits: a block of 8 x 64 threads, partials in an array of that shape, the x coverage kept (4096
    columns: 512 blocks instead of 128); the default stays 32 outputs a block."""
    src = (ZOO / "gemv_cols" / "gemv_cols.cu").read_bytes()
    out = _apply(NEW[0], src, "gemv_cols")
    assert out.launch is not None and out.launch.block == (8, 64, 1)
    assert out.launch.resolve((32, 1, 1), (128, 1, 1)) == ((512, 1, 1), (8, 64, 1))
    text = out.text.decode()
    assert "__shared__ float red[64][8];" in text and "i += 64" in text and "off < 64" in text
    default = _apply("split-reduction{splits=16}", src, "gemv_cols")
    assert default.launch is not None and default.launch.block == (32, 16, 1) and b"red[16][32]" in default.text


@pytest.mark.parametrize("opts", ["splits=64 cols=32", "splits=128 cols=16", "cols=4", "cols=12", "splits=256 cols=8"])
def test_cols_refuses_blocks_it_cannot_launch(opts: str) -> None:
    """More than 1024 threads a block, or a width that is not 8, 16 or 32, is refused with the rule, never rewritten."""
    src = (ZOO / "gemv_cols" / "gemv_cols.cu").read_bytes()
    out = run_pass(build_pipeline(f"split-reduction{{{opts}}}")[0], src, "cuda", "gemv_cols")
    assert isinstance(out, Refused) and "cols x splits at most 1024" in out.reason


def test_the_search_tries_the_measured_narrow_block_first() -> None:
    """The built-in search's split-reduction steps: the cluster form and the float4 quads (tests/test_split_reduction_cluster.py,
    tests/test_split_reduction_quads.py), then 16
    outputs by 32 splits (the H200's fastest scalar form for gemv_cols and gemv_colmajor), the default (lanes or 8
    splits) among them, never 8 scalar outputs (no faster than 32 there) nor the old splits=16; batched_gemv16's
    measured winner is one step of the space too."""
    space = search_space()
    mine = [s for s in space if s.startswith("split-reduction")]
    assert mine[2] == NEW[1] and "split-reduction" in mine and NEW[0] not in space and "split-reduction{splits=16}" not in space
    assert "inner-loop-threads{block=16x16},coalesce-remap,vector-loads{width=4}" in space


@pytest.mark.slow
@pytest.mark.parametrize("pipeline", [*NEW, "split-reduction{splits=16 cols=16}"])
def test_gemv_cols_narrow_blocks_match(tmp_path: Path, pipeline: str) -> None:
    """gemv_cols at 77 rows x 45 columns (neither a multiple of the block width nor of the splits: threads past the last
    column and splits past the last row): the same y; a split that skips the last partial and a row stride of half
    the splits (rows counted twice) are caught."""
    src = _gemv_cols(77, 45)
    out = _apply(pipeline, src, "gemv_cols")
    assert out.launch is not None
    grid, block = (1, 1, 1), (128, 1, 1)
    g, b = out.launch.resolve(grid, block)
    launches = (Launch(grid, block), Launch(g, b))
    counts = {"A": 77 * 45, "x": 77, "y": 45}
    assert same_outputs(tmp_path, "gemv_cols", src, out.text, launches, counts, {}, 1e-5) == "SAME"
    splits = b[1]
    mutants = [out.text.replace(f"off < {splits};".encode(), f"off < {splits - 1};".encode()),
               out.text.replace(f"i += {splits})".encode(), f"i += {splits // 2})".encode())]
    for broken in mutants:
        assert broken != out.text
        assert same_outputs(tmp_path, "gemv_cols", src, broken, launches, counts, {}, 1e-5) != "SAME"


@pytest.mark.slow
def test_gemv_colmajor_narrow_blocks_match(tmp_path: Path) -> None:
    """gemv_colmajor (column-major A behind a macro, y = alpha A x + beta y, sizes as parameters) at m = 45, n = 77,
    16 outputs by 32 splits: three blocks, the last one partly past m."""
    src = (ZOO / "gemv_colmajor" / "gemv_colmajor.cu").read_bytes().replace(b"#define M 4096", b"#define M 45")
    out = _apply(NEW[1], src, "gemv_colmajor")
    assert out.launch is not None
    grid, block = (1, 1, 1), (128, 1, 1)
    g, b = out.launch.resolve(grid, block)
    assert (g, b) == ((8, 1, 1), (16, 32, 1))
    launches = (Launch(grid, block), Launch(g, b))
    counts = {"a": 45 * 77, "x": 77, "y": 45}
    scalars = {"m": "45", "n": "77", "alpha": "0.75f", "beta": "0.25f"}
    assert same_outputs(tmp_path, "gemv_colmajor", src, out.text, launches, counts, scalars, 1e-5) == "SAME"
    broken = out.text.replace(b"red[s][threadIdx.x] = part;", b"red[s][0] = part;")
    assert broken != out.text
    assert same_outputs(tmp_path, "gemv_colmajor", src, broken, launches, counts, scalars, 1e-5) != "SAME"


@pytest.mark.slow
def test_opencl_narrow_blocks_match_on_pocl(tmp_path: Path) -> None:
    """The OpenCL form (local memory, a barrier) at 16 outputs by 32 splits on PoCL, 77 x 300, alpha and beta: every
    output within the MEP's tolerance; leaving out the last partial fails."""
    pytest.importorskip("pyopencl")
    from test_model_passes import COLS_CL, _evaluate, _gemv_state

    from s2s.optimize.proposers.builtin import apply_pipeline

    state = _gemv_state(COLS_CL, "gemv_cols", tmp_path / "mep")
    cand = apply_pipeline(NEW[1], state)
    assert isinstance(cand, Candidate), cand
    assert cand.launch is not None and cand.launch.block == (16, 32, 1)
    assert cand.launch.grid[0] == state.manifest.launch.grid[0] and b"__local float red[32][16];" in cand.source
    m = _evaluate(tmp_path / "mep", state, cand)
    assert m.verdict == "ok", (m.verdict, m.messages)
    assert m.outputs and all(o.ok for o in m.outputs)
    broken = cand.source.replace(b"off < 32;", b"off < 31;")
    assert broken != cand.source
    assert _evaluate(tmp_path / "mep", state, replace(cand, source=broken)).verdict != "ok"


@pytest.mark.slow
@needs_nvcc
def test_rewritten_zoo_kernels_compile(tmp_path: Path) -> None:
    files = []
    for name in ("gemv_cols", "gemv_colmajor"):
        for n, pipeline in enumerate(NEW):
            data = _apply(pipeline, (ZOO / name / f"{name}.cu").read_bytes(), name).text
            files.append(tmp_path / f"{name}_{n}.cu")
            files[-1].write_bytes(data.replace(b'"../zoo.h"', f'"{ZOO / "zoo.h"}"'.encode()))
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]


# -- lanes{lanes=4} on a 2-D kernel: batched_gemv16 after inner-loop-threads and coalesce-remap -------------------------
BATCHED = "inner-loop-threads{block=16x16},coalesce-remap,split-reduction{lanes=4}"


def _batched(pipeline: str, nbatch: int) -> tuple[bytes, bytes, tuple[Launch, Launch]]:
    """The zoo's batched_gemv16 and its rewrite through `pipeline`, with both launches for `nbatch` matrices."""
    src = (ZOO / "batched_gemv16" / "batched_gemv16.cu").read_bytes()
    grid, block = ((nbatch + 127) // 128, 1, 1), (128, 1, 1)
    g, b, text = grid, block, src
    for p in build_pipeline(pipeline):
        out = run_pass(p, text, "cuda", "batched_gemv16")
        assert isinstance(out, Applied), (pipeline, out)
        text = out.text
        if out.launch is not None:
            g, b = out.launch.resolve(g, b, values={"nbatch": nbatch})
    return src, text, (Launch(grid, block), Launch(g, b))


def test_quad_lanes_on_a_2d_kernel() -> None:
    """Four lanes per output row, each one float4 of the row: a warp reads 8 rows of one matrix (512 contiguous bytes);
    the batch index stays on y; the shuffle stays within each row's 4 lanes; 2-D kernels refuse splits mode (y taken)."""
    _, text, (_, after) = _batched(BATCHED, 131072)
    body = text.decode()
    assert after.block == (32, 8, 1) and after.grid == (2, 16384, 1)
    assert "int r = (blockIdx.x * blockDim.x + threadIdx.x) / 4;" in body and "const int lane = threadIdx.x % 4;" in body
    assert "__shfl_down_sync(0xffffffffu, part, off, 4);" in body and "for (int off = 2; off > 0; off /= 2)" in body
    assert "c += 16)" in body and "int b = blockIdx.y * blockDim.y + threadIdx.y;" in body
    _, refused, _ = _batched("inner-loop-threads{block=16x16},coalesce-remap", 64)
    got = run_pass(build_pipeline("split-reduction{mode=splits}")[0], refused, "cuda", "batched_gemv16")
    assert isinstance(got, Refused) and "threadIdx.y holds the kernel's index b" in got.reason
    bad = run_pass(build_pipeline("split-reduction{lanes=3}")[0], refused, "cuda", "batched_gemv16")
    assert isinstance(bad, Refused) and "lanes 4, 8, 16 or 32" in bad.reason
    wide = run_pass(build_pipeline("split-reduction")[0], refused, "cuda", "batched_gemv16")
    assert isinstance(wide, Refused) and "split only over 4-16 lanes" in wide.reason


def test_2d_sums_are_left_to_the_contraction_passes() -> None:
    """syrk and syr2k (an output per (i, j) thread, a long sum over k) get no split-reduction step of the search space."""
    for name in ("syrk", "syr2k"):
        src = (ZOO / name / f"{name}.cu").read_bytes()
        for step in SplitReduction.space:
            assert isinstance(run_pass(build_pipeline(step)[0], src, "cuda", name), Refused), (name, step)


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 1])
def test_batched_quad_lanes_match(tmp_path: Path, offset: int) -> None:
    """37 matrices (the last block of 8 partly past the batch), buffers on and off a 16-byte boundary (the scalar path):
    the same ys; a shuffle over 2 lanes instead of 4 and a quad loop stepping one lane-width are caught."""
    src, text, launches = _batched(BATCHED, 37)
    counts, scalars = {"mats": 37 * 256, "xs": 37 * 16, "ys": 37 * 16}, {"nbatch": "37"}
    assert same_outputs(tmp_path, "batched_gemv16", src, text, launches, counts, scalars, 1e-5, offset) == "SAME"
    if offset == 0:
        for broken in (text.replace(b"part, off, 4);", b"part, off, 2);"), text.replace(b"c += 16)", b"c += 4)")):
            assert broken != text
            assert same_outputs(tmp_path, "batched_gemv16", src, broken, launches, counts, scalars, 1e-5, offset) != "SAME"


@pytest.mark.slow
@needs_nvcc
def test_batched_quad_lanes_compile(tmp_path: Path) -> None:
    _, text, _ = _batched(BATCHED, 131072)
    f = tmp_path / "batched_gemv16.cu"
    f.write_bytes(text.replace(b'"../zoo.h"', f'"{ZOO / "zoo.h"}"'.encode()))
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], [f], tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]
