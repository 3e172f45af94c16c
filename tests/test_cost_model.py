"""The cost model orders what the model-derived passes produce ahead of the naive kernels they replace."""
from __future__ import annotations

from s2s.lang.target_device import TargetDevice
from s2s.optimize.cost import predict, rank
from s2s.optimize.registry import Applied, build_pipeline, run_pass

GEMM = b"""
__global__ void gemm(int ni, int nj, int nk, float alpha, float beta, const float* a, const float* b, float* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < ni && j < nj) {
        c[i * nj + j] *= beta;
        for (int k = 0; k < nk; k++)
            c[i * nj + j] += alpha * a[i * nk + k] * b[k * nj + j];
    }
}
"""
GEMV = b"""
__global__ void gemv(int m, int n, const float* a, const float* x, float* y)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) {
        y[j] = 0.0f;
        for (int i = 0; i < m; i++)
            y[j] += a[i * n + j] * x[i];
    }
}
"""
N = 1024


def _apply(pipeline: str, src: bytes, grid: tuple[int, int, int], block: tuple[int, int, int]):  # type: ignore[no-untyped-def]
    for p in build_pipeline(pipeline):
        out = run_pass(p, src, "cuda")
        assert isinstance(out, Applied), out
        src = out.text
        if out.launch is not None:
            grid, block = out.launch.resolve(grid, block)
    return src, grid, block


def test_tiling_is_predicted_faster_than_the_naive_product() -> None:
    sizes = {"ni": N, "nj": N, "nk": N, "alpha": 1.5, "beta": 0.5}
    naive = predict(GEMM, "cuda", None, (64, 64, 1), (16, 16, 1), sizes)
    assert naive is not None and naive.fill == 1.0
    assert abs(naive.flops - 3.0 * N ** 3) / (3.0 * N ** 3) < 1e-9  # alpha*a*b and the += per (i, j, k)
    src, grid, block = _apply("contraction-tiling", GEMM, (64, 64, 1), (16, 16, 1))
    tiled = predict(src, "cuda", None, grid, block, sizes)
    assert tiled is not None and tiled.flops == naive.flops  # the same arithmetic ...
    assert tiled.dram_bytes < naive.dram_bytes / 4 and tiled.seconds < naive.seconds  # ... from far fewer bytes


def test_an_underfilled_launch_is_predicted_slow_and_its_split_fast() -> None:
    sizes = {"m": 4096, "n": 4096}
    naive = predict(GEMV, "cuda", None, (16, 1, 1), (256, 1, 1), sizes)
    assert naive is not None and naive.fill < 0.02 and naive.bound == "dram"
    src, grid, block = _apply("split-reduction{splits=16}", GEMV, (16, 1, 1), (256, 1, 1))
    split = predict(src, "cuda", None, grid, block, sizes)
    assert split is not None and split.fill > 10 * naive.fill and split.seconds < naive.seconds / 5
    assert rank({"naive": naive, "split": split, "unknown": None}) == ["split", "naive", "unknown"]


def test_a_smaller_device_is_slower() -> None:
    sizes = {"m": 4096, "n": 4096}
    big = predict(GEMV, "cuda", None, (16, 1, 1), (256, 1, 1), sizes)
    small = predict(GEMV, "cuda", None, (16, 1, 1), (256, 1, 1), sizes, TargetDevice(name="half", bandwidth=2.4e12))
    assert big is not None and small is not None and abs(small.seconds / big.seconds - 2.0) < 1e-6
    assert predict(GEMV, "cuda", None, (16, 1, 1), (256, 1, 1), {"n": 4096}) is None  # m unknown: no trip count


def test_the_builtin_search_tries_the_predicted_winner_first() -> None:
    from mep_util import ParamSpec, manifest

    from s2s.lang.kernel_facts import kernel_facts
    from s2s.optimize.candidate import Candidate
    from s2s.optimize.cost import order
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import apply_pipeline

    m = manifest("gemv", "cuda", "kernel.cu", [
        ParamSpec("m", "int", "scalar", "int", value=4096), ParamSpec("n", "int", "scalar", "int", value=4096),
        ParamSpec("a", "const float *", "in", "float", count=4096 * 4096), ParamSpec("x", "const float *", "in", "float", count=4096),
        ParamSpec("y", "float *", "out", "float", count=4096)], (16, 1, 1), (256, 1, 1))
    state = State(manifest=m, original=GEMV, kernel="gemv", dialect="cuda", facts=kernel_facts(GEMV, "cuda", "gemv"))
    cands = [apply_pipeline(p, state) for p in ("restrict-const", "split-reduction{splits=16}", "launch-config{block=128}")]
    assert all(isinstance(c, Candidate) for c in cands), cands
    ranked = order(cands, state)  # type: ignore[arg-type]
    assert [c.origin for c in ranked][0] == "pass:split-reduction{splits=16}" and len(ranked) == 3
    assert order(cands, State(manifest=m, original=GEMV, kernel="gemv", dialect="opencl", facts=None)) == cands  # type: ignore[arg-type]


GATHER8 = b"""
__global__ void gather8(int n, float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0.0f;
        for (int k = 0; k < 8; k++)
            s += x[k * n + i];
        y[i] = s;
    }
}
"""
ITERATE = b"""
__global__ void iterate(int n, float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        for (int k = 0; k < 512; k++)
            v = v * 0.999f + 0.5f;
        y[i] = v;
    }
}
"""


def test_candidates_the_model_cannot_tell_apart_follow_the_kernels_limiter() -> None:
    """restrict-const, loop-unroll and a block size are all predicted exactly as the original (the model sees no change):
    on a memory-bound kernel (8 loads and 8 flops an output) the read-only loads come before the unrolled loop, on a
    compute-bound one (1024 flops an output) the reverse; the launch change, whose pass declares nothing, keeps its place."""
    from mep_util import ParamSpec, manifest

    from s2s.lang.kernel_facts import kernel_facts
    from s2s.optimize.candidate import Candidate
    from s2s.optimize.cost import order, predict_candidate
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import apply_pipeline

    n = 1 << 22
    firsts = {}
    for name, src, count, bound in (("gather8", GATHER8, 8 * n, "dram"), ("iterate", ITERATE, n, "compute")):
        m = manifest(name, "cuda", "kernel.cu", [ParamSpec("n", "int", "scalar", "int", value=n),
                                                 ParamSpec("x", "float *", "in", "float", count=count),
                                                 ParamSpec("y", "float *", "out", "float", count=n)], (n // 256, 1, 1), (256, 1, 1))
        state = State(manifest=m, original=src, kernel=name, dialect="cuda", facts=kernel_facts(src, "cuda", name))
        cands = [apply_pipeline(p, state) for p in ("restrict-const", "loop-unroll{factor=4}", "launch-config{block=128}")]
        assert all(isinstance(c, Candidate) for c in cands), cands
        base = predict_candidate(None, state)
        assert base is not None and base.bound == bound
        assert all(predict_candidate(c, state) == base for c in cands)  # type: ignore[arg-type]
        firsts[name] = [c.origin for c in order(cands, state)]  # type: ignore[arg-type]
    assert firsts["gather8"] == ["pass:restrict-const", "pass:loop-unroll{factor=4}", "pass:launch-config{block=128}"]
    assert firsts["iterate"] == ["pass:loop-unroll{factor=4}", "pass:restrict-const", "pass:launch-config{block=128}"]
