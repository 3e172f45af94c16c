"""block-reduce-shuffle{warps=W} (issue 15: dot_blocks at 69% of the copy floor with coarsen=4): one warp reduces each
original block's B elements (float4 words where the segment is whole and aligned), W warps a block, no shared memory.
Run threaded on the CPU against the original (tests/emulate_cuda_block.py) on both paths, partial last blocks and
warps past the original grid included, compiled with nvcc, and first in the built-in search's round 1."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from emulate_cuda import Launch
from emulate_cuda_block import same_outputs
from session_builds import nvcc_checks
from test_block_reduce_coarsen import BLOCK_MAX, DOT, _apply

from s2s.lang.edits import Refused
from s2s.optimize.registry import build_pipeline, run_pass

ZOO = ROOT / "bench" / "zoo"
BLOCK_MIN_INT = (ROOT / "tests" / "golden" / "passes" / "block_reduce_shuffle_warps_min_doubling.cu").read_text() \
    .split("// ----- INPUT\n", 1)[1].split("// ----- EXPECTED\n", 1)[0]


def test_dot_blocks_takes_one_warp_a_block() -> None:
    """65536 blocks of 256 become 8192 blocks of 8 warps; each warp loads its block's 256 elements of x and y as two
    float4 words a lane, and lane 0 writes the partial of the original block it stands for."""
    out = _apply("block-reduce-shuffle{warps=8}", DOT.encode(), "dot_blocks")
    assert out.launch is not None and out.launch.resolve((65536, 1, 1), (256, 1, 1)) == ((8192, 1, 1), (256, 1, 1))
    assert _apply("block-reduce-shuffle{warps=1}", DOT.encode(), "dot_blocks").launch.resolve(  # type: ignore[union-attr]
        (65536, 1, 1), (256, 1, 1)) == ((65536, 1, 1), (32, 1, 1))
    text = out.text.decode()
    assert "__shared__" not in text and "__syncthreads" not in text
    assert "const float4 x_w = *reinterpret_cast<const float4*>(x + q);" in text
    assert "if (seg * (BLOCK) >= (N)) return;" in text and "partial[seg] = v;" in text


def test_a_grid_stride_value_is_refused() -> None:
    """reduce_max_blocks computes each thread's value in a grid-stride loop: refused (one warp would run 16 threads'
    loops, and its 1024 blocks would give the H200 1024 warps)."""
    src = (ZOO / "reduce_max_blocks" / "reduce_max_blocks.cu").read_bytes()
    out = run_pass(build_pipeline("block-reduce-shuffle{warps=8}")[0], src, "cuda", "reduce_max_blocks")
    assert isinstance(out, Refused) and "may compute" in out.reason


def test_options_are_checked() -> None:
    for bad in ("block-reduce-shuffle{warps=3}", "block-reduce-shuffle{warps=8 coarsen=4}"):
        out = run_pass(build_pipeline(bad)[0], DOT.encode(), "cuda", "dot_blocks")
        assert isinstance(out, Refused) and "warps" in out.reason, bad


@pytest.mark.slow
@pytest.mark.parametrize("warps", [1, 4, 8])
@pytest.mark.parametrize("offset", [0, 1])
def test_warp_dot_blocks_gives_the_same_partials(tmp_path: Path, warps: int, offset: int) -> None:
    """dot_blocks over 5000 elements (20 blocks, the last partial; with 8 warps a block 4 warps past the grid): every
    partial within float rounding, aligned buffers taking the words, buffers one element off taking the scalar path;
    quads that skip, a lane value kept from its last quad only, or a butterfly one step short are caught."""
    src = DOT.replace("#define N (1 << 24)", "#define N 5000").encode()
    out = _apply(f"block-reduce-shuffle{{warps={warps}}}", src, "dot_blocks")
    launches = (Launch((20, 1, 1), (256, 1, 1)), Launch((-(-20 // warps), 1, 1), (32 * warps, 1, 1)))
    counts = {"x": 5000, "y": 5000, "partial": 20}
    assert same_outputs(tmp_path, "dot_blocks", src, out.text, launches, counts, {}, rtol=1e-5, offset=offset) == "SAME"
    mutants = [out.text.replace(b"for (int off = 16;", b"for (int off = 8;"),
               out.text.replace(b"v = c == 0 ? e : v + e;", b"v = e;") if offset else
               out.text.replace(b"const int q = i0 + 4 * (lane + 32 * h);", b"const int q = i0 + 4 * lane;")]
    for broken in mutants:
        assert broken != out.text
        assert same_outputs(tmp_path, "dot_blocks", src, broken, launches, counts, {}, rtol=1e-5, offset=offset) != "SAME"


@pytest.mark.slow
@pytest.mark.parametrize("warps", [1, 2, 4])
def test_warp_maxima_and_minima_are_exact(tmp_path: Path, warps: int) -> None:
    """fmaxf over blocks of 128 indexed through blockDim.x (words: B is a multiple of 128) and an int min over blocks of 64
    (a doubling tree, scalar only): bit-exact, partial last blocks and warps past the grid included."""
    n = 1000
    out = _apply(f"block-reduce-shuffle{{warps={warps}}}", BLOCK_MAX.encode(), "block_max")
    assert b"float4" in out.text
    launches = (Launch((8, 1, 1), (128, 1, 1)), Launch((-(-8 // warps), 1, 1), (32 * warps, 1, 1)))
    assert same_outputs(tmp_path, "block_max", BLOCK_MAX.encode(), out.text, launches, {"v": n, "out": 8}, {"n": str(n)}) == "SAME"
    out = _apply(f"block-reduce-shuffle{{warps={warps}}}", BLOCK_MIN_INT.encode(), "block_min")
    launches = (Launch((16, 1, 1), (64, 1, 1)), Launch((-(-16 // warps), 1, 1), (32 * warps, 1, 1)))
    assert same_outputs(tmp_path, "block_min", BLOCK_MIN_INT.encode(), out.text, launches, {"v": n, "out": 16}, {"n": str(n)}) == "SAME"


@pytest.mark.slow
def test_warp_forms_compile(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    dot = _apply("block-reduce-shuffle{warps=8}", DOT.encode(), "dot_blocks").text.replace(b'"../zoo.h"', f'"{ZOO / "zoo.h"}"'.encode())
    (tmp_path / "dot.cu").write_bytes(dot)
    (tmp_path / "max.cu").write_bytes(_apply("block-reduce-shuffle{warps=4}", BLOCK_MAX.encode(), "block_max").text)
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], [tmp_path / "dot.cu", tmp_path / "max.cu"], tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_builtin_search_tries_the_warp_form_first(tmp_path: Path) -> None:
    """Round 1 on dot_blocks starts with warps=8 (H200 probe: 34.56 us, 91% of the copy floor, against coarsen=4's
    45.28 us)."""
    from test_fast_math import _zoo_state

    from s2s.optimize.proposers.builtin import BuiltinProposer

    state = _zoo_state("dot_blocks", tmp_path / "dot_blocks")
    state.round = 1
    order = [c.origin for c in BuiltinProposer().propose(state)]
    assert order[0] == "pass:block-reduce-shuffle{warps=8}", order
