"""One atomic per block (issue 15: reduce_atomic and dot_atomic far from the copy bandwidth because of same-address
atomics): atomic-accumulate and warp-reduce-atomics end in a block-wide shuffle sum, run threaded on the CPU
(tests/emulate_cuda_block.py) against the originals, with partial warps, and mutants that must fail."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from emulate_cuda import Launch
from emulate_cuda_block import same_outputs
from session_builds import nvcc_checks

from s2s.lang.edits import Refused
from s2s.optimize.registry import Applied, build_pipeline, make_pass, run_pass

ZOO = ROOT / "bench" / "zoo"

COUNT_BIG = """\
__global__ void count_big(const float* __restrict__ v, unsigned int* hits, float cut, int n)
{
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i >= n)
        return;
    atomicAdd(hits, (v[i] > cut ? 3u : 0u));
}
"""


def _zoo(name: str) -> bytes:
    return (ZOO / name / f"{name}.cu").read_bytes()


def _run(pipeline: str, source: bytes, kernel: str) -> Applied:
    out: Applied | Refused | None = None
    for p in build_pipeline(pipeline):
        out = run_pass(p, source, "cuda", kernel)
        assert isinstance(out, Applied), (pipeline, out)
        source = out.text
    assert isinstance(out, Applied)
    return out


def _body(out: Applied) -> str:
    text = out.text.decode()
    return text[text.index("__global__"):text.index("int main")] if "int main" in text else text


def test_atomic_accumulate_leaves_one_atomic_per_block() -> None:
    """reduce_atomic: a grid filling the H200 (1056 blocks of 256), one atomicAdd per block (1056, not 270336 as
    one per thread left it), done by thread 0 after a barrier; warp-reduce-atomics then has nothing left to do."""
    out = _run("atomic-accumulate", _zoo("reduce_atomic"), "reduce_atomic")
    body = _body(out)
    assert body.count("atomicAdd(") == 1 and "if (tid == 0) atomicAdd(total, acc);" in body
    assert "__syncthreads();" in body and body.count("__shfl_down_sync(wmask, acc, off)") == 2
    assert out.launch is not None and out.launch.resolve((65536, 1, 1), (256, 1, 1), values={"n": 1 << 24}) == ((1056, 1, 1), (256, 1, 1))
    again = run_pass(make_pass("warp-reduce-atomics", {}), out.text, "cuda", "reduce_atomic")
    assert isinstance(again, Refused) and "already reduces" in again.reason


def test_warp_reduce_atomics_scopes() -> None:
    """dot_atomic (grid-stride loop, a partial per thread): block scope by default (one atomic per block, a barrier),
    warp scope on request (one per warp, no barrier); any other scope is refused."""
    src = _zoo("dot_atomic")
    block, warp = _body(_run("warp-reduce-atomics", src, "dot_atomic")), _body(_run("warp-reduce-atomics{scope=warp}", src, "dot_atomic"))
    assert "if (tid == 0) atomicAdd(result, wsum);" in block and "__syncthreads" in block and "__shared__ float wsum_w[32];" in block
    assert "if ((tid & 31) == 0) atomicAdd(result, wsum);" in warp and "__syncthreads" not in warp
    bad = run_pass(make_pass("warp-reduce-atomics", {"scope": "grid"}), src, "cuda", "dot_atomic")
    assert isinstance(bad, Refused) and "scope" in bad.reason


@pytest.mark.slow
@pytest.mark.parametrize("block,offset", [((256, 1, 1), 0), ((80, 1, 1), 1), ((20, 1, 1), 0), ((16, 4, 1), 1)])
def test_atomic_accumulate_sums_what_the_atomics_summed(tmp_path: Path, block: tuple[int, int, int], offset: int) -> None:
    """reduce_atomic over 4011 elements (not a multiple of 4: three in the scalar tail), the rewrite on grids of several
    block shapes (a partial last warp at 80 and 20 threads, a 2-D block at 16x4 whose threads of one x repeat the
    original's duplicates), the input 16-byte aligned (the float4 loop) or one element off (the scalar loop alone): the
    total matches within float rounding. Mutants: the warps' sums not kept, a full shuffle mask on a partial warp, a sum
    that keeps only its last element, a quad's last lane dropped, the tail starting at the first element again."""
    before, n = _zoo("reduce_atomic"), 4011
    out = _run("atomic-accumulate", before, "reduce_atomic")
    launches = (Launch(((n + block[0] - 1) // block[0], 1, 1), block), Launch((5, 1, 1), block))
    counts, scalars = {"in": n, "total": 1}, {"n": str(n)}
    assert same_outputs(tmp_path, "reduce_atomic", before, out.text, launches, counts, scalars, 1e-4, offset) == "SAME"
    mutants = [out.text.replace(b"if ((tid & 31) == 0) acc_w[tid / 32] = acc;", b""),
               out.text.replace(b"acc += in[i] * in[i]", b"acc = in[i] * in[i]")]
    if block[0] * block[1] % 32:
        mutants.append(out.text.replace(b"(1u << here) - 1u", b"0xffffffffu"))
    if offset == 0:
        mutants += [out.text.replace(b"acc += in_4.w * in_4.w;", b""), out.text.replace(b"i0 += (n) / 4 * 4;", b"")]
    for broken in mutants:
        assert broken != out.text
        assert same_outputs(tmp_path, "reduce_atomic", before, broken, launches, counts, scalars, 1e-4, offset) != "SAME"


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 1])
def test_atomic_accumulate_on_a_grid_stride_partial(tmp_path: Path, offset: int) -> None:
    """dot_atomic (a partial per thread over a grid-stride loop, then one atomic per thread) keeps its launch and gets
    float4 loads of both vectors and one atomic per block; 10007 elements, 7 blocks of 80 threads: the same dot
    product. A quad loop that reads x where it should read y is caught on the aligned path."""
    before, n = _zoo("dot_atomic"), 10007
    out = _run("atomic-accumulate", before, "dot_atomic")
    body = _body(out)
    assert out.launch is None and body.count("atomicAdd(") == 1 and "reinterpret_cast<const float4*>(y)[q]" in body
    launch = Launch((7, 1, 1), (80, 1, 1))
    counts, scalars = {"x": n, "y": n, "result": 1}, {"n": str(n)}
    assert same_outputs(tmp_path, "dot_atomic", before, out.text, (launch, launch), counts, scalars, 1e-4, offset) == "SAME"
    wrong = out.text.replace(b"part += x_4.z * y_4.z;", b"part += x_4.z * x_4.z;")
    assert wrong != out.text
    verdict = same_outputs(tmp_path, "dot_atomic", before, wrong, (launch, launch), counts, scalars, 1e-4, offset)
    assert (verdict == "SAME") == (offset == 1), verdict


@pytest.mark.slow
def test_integer_counts_stay_exact(tmp_path: Path) -> None:
    """An unsigned count (the early-return guard form) is exact after atomic-accumulate, and after warp-reduce-atomics
    of its guarded-if form: no tolerance."""
    n = 5003
    src = COUNT_BIG.encode()
    out = _run("atomic-accumulate", src, "count_big")
    counts, scalars = {"v": n, "hits": 1}, {"n": str(n), "cut": "70.0f"}
    orig = Launch(((n + 127) // 128, 1, 1), (128, 1, 1))
    assert same_outputs(tmp_path, "count_big", src, out.text, (orig, Launch((3, 1, 1), (72, 1, 1))), counts, scalars) == "SAME"
    guarded = src.replace(b"if (i >= n)\n        return;\n    atomicAdd", b"if (i < n)\n        atomicAdd")
    assert guarded != src
    warp = _run("warp-reduce-atomics", guarded, "count_big")
    assert same_outputs(tmp_path, "count_big", guarded, warp.text, (orig, orig), counts, scalars) == "SAME"
    off_by_one = warp.text.replace(b"if (tid + off < here)", b"if (tid + off <= here)")
    assert off_by_one != warp.text
    assert same_outputs(tmp_path, "count_big", guarded, off_by_one, (orig, Launch((1, 1, 1), (20, 1, 1))), counts, scalars) != "SAME"


@pytest.mark.slow
@pytest.mark.parametrize("scope", ["block", "warp"])
def test_dot_atomic_block_sum_matches(tmp_path: Path, scope: str) -> None:
    """dot_atomic's grid-stride form with a partial last warp (80 threads): both scopes give the original's dot product."""
    before, n = _zoo("dot_atomic"), 10007
    out = _run(f"warp-reduce-atomics{{scope={scope}}}", before, "dot_atomic")
    launch = Launch((7, 1, 1), (80, 1, 1))
    counts, scalars = {"x": n, "y": n, "result": 1}, {"n": str(n)}
    assert same_outputs(tmp_path, "dot_atomic", before, out.text, (launch, launch), counts, scalars, rtol=1e-4) == "SAME"
    dropped = out.text.replace(b"wsum += other;", b"wsum = other;", 1)
    assert dropped != out.text
    assert same_outputs(tmp_path, "dot_atomic", before, dropped, (launch, launch), counts, scalars, rtol=1e-4) != "SAME"


@pytest.mark.slow
def test_block_sums_compile_with_nvcc(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    files = []
    for k, (name, pipeline) in enumerate((("reduce_atomic", "atomic-accumulate"), ("dot_atomic", "atomic-accumulate"),
                                          ("dot_atomic", "warp-reduce-atomics"))):
        files.append(tmp_path / f"{name}_{k}.cu")
        files[-1].write_bytes(_run(pipeline, _zoo(name), name).text.replace(b'"../zoo.h"', f'"{ZOO / "zoo.h"}"'.encode()))
    files.append(tmp_path / "count_big.cu")
    files[-1].write_bytes(_run("atomic-accumulate", COUNT_BIG.encode(), "count_big").text)
    proc = nvcc_checks(nvcc, ["-c", "-arch=sm_90", "-Werror", "all-warnings"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]
