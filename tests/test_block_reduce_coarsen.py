"""block-reduce-shuffle{coarsen=F} (issue 15: dot_blocks at 45% of the copy bandwidth): B / F threads per block, each
combining F elements in registers, the block->output mapping unchanged. Run threaded on the CPU against the original
(tests/emulate_cuda_block.py), partial last blocks included, and compiled with nvcc."""
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
DOT = (ZOO / "dot_blocks" / "dot_blocks.cu").read_text()
BLOCK_MAX = """\
#define B 128
__global__ void block_max(const float* v, float* out, int n)
{
    __shared__ float m[B];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    m[threadIdx.x] = i < n ? v[i] : -1e30f;
    __syncthreads();
    for (unsigned s = B / 2; s > 0; s >>= 1) {
        if (tid < s)
            m[tid] = fmaxf(m[tid], m[tid + s]);
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = m[0];
}
"""


def _apply(pipeline: str, source: bytes, kernel: str) -> Applied:
    out = None
    for p in build_pipeline(pipeline):
        out = run_pass(p, source, "cuda", kernel)
        assert isinstance(out, Applied), (pipeline, out)
        source = out.text
    assert out is not None
    return out


def test_dot_blocks_keeps_its_grid_with_a_quarter_of_the_threads() -> None:
    """65536 blocks of 256 become 65536 blocks of 64; the block's elements are still blockIdx.x * 256 + 0..255, each
    thread's four loads in one unrolled loop, consecutive threads on consecutive elements."""
    out = _apply("block-reduce-shuffle{coarsen=4}", DOT.encode(), "dot_blocks")
    assert out.launch is not None and out.launch.resolve((65536, 1, 1), (256, 1, 1)) == ((65536, 1, 1), (64, 1, 1))
    text = out.text.decode()
    assert "#pragma unroll\n    for (int c = 0; c < 4; ++c)" in text and "const int t_c = t + c * ((BLOCK) / 4);" in text
    assert "int i = blockIdx.x * BLOCK + t_c;" in text and "buf[t] =" not in text
    assert "partial[blockIdx.x] = buf[0];" in text


@pytest.mark.slow
@pytest.mark.parametrize("coarsen", [2, 4])
def test_coarsened_dot_blocks_gives_the_same_partials(tmp_path: Path, coarsen: int) -> None:
    """dot_blocks' kernel over 5000 elements (20 blocks, the last one partial): every partial sum matches within float
    rounding; a thread that takes neighbouring elements twice, or keeps only its last value, is caught."""
    src = DOT.replace("#define N (1 << 24)", "#define N 5000").encode()
    out = _apply(f"block-reduce-shuffle{{coarsen={coarsen}}}", src, "dot_blocks")
    launches = (Launch((20, 1, 1), (256, 1, 1)), Launch((20, 1, 1), (256 // coarsen, 1, 1)))
    counts = {"x": 5000, "y": 5000, "partial": 20}
    assert same_outputs(tmp_path, "dot_blocks", src, out.text, launches, counts, {}, rtol=1e-5) == "SAME"
    for broken in (out.text.replace(f"c * ((BLOCK) / {coarsen})".encode(), b"c"), out.text.replace(b"acc = c == 0 ? e : acc + e;", b"acc = e;")):
        assert broken != out.text
        assert same_outputs(tmp_path, "dot_blocks", src, broken, launches, counts, {}, rtol=1e-5) != "SAME"


@pytest.mark.slow
@pytest.mark.parametrize("coarsen", [2, 4])
def test_coarsened_block_max_is_exact(tmp_path: Path, coarsen: int) -> None:
    """A maximum over blocks of 128 indexed through blockDim.x (which becomes the constant B: the block shrinks), down
    to one warp per block at coarsen=4: bit-exact."""
    n = 1000
    out = _apply(f"block-reduce-shuffle{{coarsen={coarsen}}}", BLOCK_MAX.encode(), "block_max")
    assert "blockDim" not in out.text.decode().split("for (int c")[1].split("}")[0]
    launches = (Launch((8, 1, 1), (128, 1, 1)), Launch((8, 1, 1), (128 // coarsen, 1, 1)))
    counts, scalars = {"v": n, "out": 8}, {"n": str(n)}
    assert same_outputs(tmp_path, "block_max", BLOCK_MAX.encode(), out.text, launches, counts, scalars) == "SAME"
    kept_blockdim = out.text.replace(b"blockIdx.x * (B) + tid_c", b"blockIdx.x * blockDim.x + tid_c")
    assert kept_blockdim != out.text
    assert same_outputs(tmp_path, "block_max", BLOCK_MAX.encode(), kept_blockdim, launches, counts, scalars) != "SAME"


@pytest.mark.slow
def test_coarsened_trees_compile(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    dot = _apply("block-reduce-shuffle{coarsen=4}", DOT.encode(), "dot_blocks").text.replace(b'"../zoo.h"', f'"{ZOO / "zoo.h"}"'.encode())
    (tmp_path / "dot.cu").write_bytes(dot)
    (tmp_path / "max.cu").write_bytes(_apply("block-reduce-shuffle{coarsen=4}", BLOCK_MAX.encode(), "block_max").text)
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], [tmp_path / "dot.cu", tmp_path / "max.cu"], tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]
