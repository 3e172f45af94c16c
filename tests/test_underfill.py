"""Launches that underfill the GPU (issue #15): the model's SM-fill rule, and launch-config's smaller 1-D blocks,
proposed only where that rule predicts a gain."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mep_util import ParamSpec, make_mep, manifest

from s2s.lang.edits import LaunchChange, Refused
from s2s.lang.kernel_facts import kernel_facts
from s2s.lang.kernel_model import SM_SPREAD, parallelism
from s2s.lang.target_device import TargetDevice
from s2s.optimize.candidate import Candidate
from s2s.optimize.cost import predict
from s2s.optimize.proposers.base import State
from s2s.optimize.proposers.builtin import BuiltinProposer, apply_pipeline
from s2s.optimize.registry import Applied, get_pass, make_pass, run_pass, search_space

# a triangular solve, one thread per right-hand side: a sequential loop over rows with a dependent inner sum
TRSM = b"""\
__global__ void trsm(const float* L, float* B, int n, int nrhs)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nrhs)
        return;
    for (int i = 0; i < n; i++) {
        float s = B[i * nrhs + c];
        for (int k = 0; k < i; k++)
            s -= L[i * n + k] * B[k * nrhs + c];
        B[i * nrhs + c] = s / L[i * n + i];
    }
}
"""
H200 = TargetDevice()


# -- the model -------------------------------------------------------------------------------------
def test_an_underfilled_launch_predicts_more_smaller_blocks_faster() -> None:
    """8192 threads: 16 blocks of 512 < 64 of 128 < 128 of 64 <= 256 of 32, as the SMs that get a block grow."""
    fills = {b: parallelism((8192 // b, 1, 1), (b, 1, 1)) for b in (512, 128, 64, 32)}
    assert {b: p.threads for b, p in fills.items()} == dict.fromkeys(fills, 8192)
    assert {b: p.occupancy for b, p in fills.items()} == dict.fromkeys(fills, 8192 / (132 * 2048))  # the same warps
    assert [fills[b].sm_fill for b in (512, 128, 64, 32)] == [16 / 132, 64 / 132, 128 / 132, 1.0]
    assert fills[512].fill < fills[128].fill < fills[64].fill < fills[32].fill
    # the one measured pair (H200, trsm_cols): 64 blocks of 128 ran 1.25x faster than 16 of 512
    assert abs(fills[128].fill / fills[512].fill - 1.25) < 0.01
    assert fills[32].fill == fills[32].occupancy and fills[32].underfilled


def test_a_launch_with_a_block_on_every_sm_keeps_its_fill() -> None:
    """Blocks >= SMs: fill is the occupancy, as before the rule; smaller blocks gain nothing, and 32-thread blocks,
    held to 32 per SM by the block limit, lose half the device's thread slots."""
    full = {b: parallelism(((1 << 20) // b, 1, 1), (b, 1, 1)) for b in (512, 128, 64, 32)}
    assert [full[b].fill for b in (512, 128, 64)] == [1.0, 1.0, 1.0]
    assert full[32].fill == 0.5 and full[32].resident == 132 * 32 * 32
    # underfilled, yet every SM has a block: the same warps, the same fill, whatever the block size
    spread = {b: parallelism((33792 // b, 1, 1), (b, 1, 1)) for b in (128, 64, 32)}
    assert len({p.fill for p in spread.values()}) == 1 and spread[128].fill == 33792 / (132 * 2048)
    assert parallelism((256, 256, 1), (16, 16, 1)).fill == 1.0
    small = TargetDevice(name="small", sms=4, threads_per_sm=1024, blocks_per_sm=8)
    assert parallelism((2, 1, 1), (256, 1, 1), small).sm_fill == 0.5
    assert abs(parallelism((2, 1, 1), (256, 1, 1), small).fill - 512 / 4096 * 0.5 ** SM_SPREAD) < 1e-12


def test_the_prediction_follows_the_sm_fill() -> None:
    sizes = {"n": 512, "nrhs": 8192}
    t = {b: predict(TRSM, "cuda", "trsm", (8192 // b, 1, 1), (b, 1, 1), sizes) for b in (512, 128, 64, 32)}
    assert all(p is not None for p in t.values())
    secs = {b: p.seconds for b, p in t.items() if p is not None}
    assert secs[32] < secs[128] < secs[512]  # more SMs busy: faster
    # the fill's gain, less a little: L's rows, which a block's threads share, are read once per block (4x as many)
    assert 1.1 < secs[128] / secs[32] <= (132 / 64) ** SM_SPREAD
    assert t[32] is not None and t[128] is not None and abs(t[32].fill / t[128].fill - (132 / 64) ** SM_SPREAD) < 1e-9
    wide = {"n": 512, "nrhs": 1 << 20}  # 4096 blocks of 256: every SM full, a smaller block gains nothing
    w = {b: predict(TRSM, "cuda", "trsm", ((1 << 20) // b, 1, 1), (b, 1, 1), wide) for b in (256, 128, 64, 32)}
    assert [p.fill for p in w.values() if p is not None] == [1.0, 1.0, 1.0, 0.5]
    ws = [p.seconds for p in w.values() if p is not None]
    assert ws == sorted(ws) and ws[3] > 1.9 * ws[0]  # L re-read per block: slightly slower; 32: half the thread slots


# -- launch-config's smaller blocks ----------------------------------------------------------------
def test_the_space_offers_32_and_64_thread_blocks_last_and_speculative() -> None:
    cls = get_pass("launch-config")
    assert cls.space[-2:] == ("launch-config{block=64}", "launch-config{block=32}")
    assert cls.speculative == frozenset(cls.space[-2:]) and set(cls.space[-2:]) <= set(search_space())


@pytest.mark.parametrize("block,grid", [(32, (256, 1, 1)), (64, (128, 1, 1))])
def test_a_smaller_block_keeps_the_coverage(block: int, grid: tuple[int, int, int]) -> None:
    out = run_pass(make_pass("launch-config", {"block": str(block)}), TRSM, "cuda", "trsm")
    assert isinstance(out, Applied) and out.text == TRSM  # only the launch changes
    assert out.launch == LaunchChange((block, 1, 1), "same-coverage")
    assert out.launch.resolve((64, 1, 1), (128, 1, 1)) == (grid, (block, 1, 1))
    assert out.launch.resolve((3, 1, 1), (100, 1, 1))[0][0] == -(-300 // block)  # rounded up: the guard holds the rest
    assert out.launch.resolve((4, 2, 1), (128, 1, 1)) == ((512 // block, 2, 1), (block, 1, 1))  # y untouched


SHARED = b"""\
__global__ void blocksum(const float* x, float* out)
{
    __shared__ float s[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = x[i];
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
"""
SHAPE_BOUND = b"""\
__global__ void rows(const float* a, float* out, int n)
{
    int i = threadIdx.x;
    int j = blockIdx.x + 1;
    out[j * n + i] = a[j * n + i];
}
"""
NO_INDEX = b"""\
__global__ void one(float* out)
{
    out[0] = 1.0f;
}
"""
BOUNDED = b"""\
__global__ void __launch_bounds__(256) scale(float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""


@pytest.mark.parametrize("src,why", [(SHARED, "shared memory sized for the current block"),
                                     (SHAPE_BOUND, "is used on its own"),
                                     (NO_INDEX, "no global thread index")])
@pytest.mark.parametrize("block", ["32", "64"])
def test_the_refusals_stay(src: bytes, why: str, block: str) -> None:
    out = run_pass(make_pass("launch-config", {"block": block}), src, "cuda")
    assert isinstance(out, Refused) and why in out.reason, out


def test_launch_bounds_allow_a_smaller_block_and_refuse_a_larger_one() -> None:
    assert isinstance(run_pass(make_pass("launch-config", {"block": "32"}), BOUNDED, "cuda"), Applied)
    big = run_pass(make_pass("launch-config", {"block": "512"}), BOUNDED, "cuda")
    assert isinstance(big, Refused) and "__launch_bounds__ allows at most 256" in big.reason


# -- the built-in search: only where the model predicts a gain --------------------------------------
def _state(nrhs: int, block: int = 128, n: object = 512) -> State:
    m = manifest("trsm", "cuda", "kernel.cu", [
        ParamSpec("L", "const float *", "in", "float", count=512 * 512), ParamSpec("B", "float *", "inout", "float", count=512 * nrhs),
        ParamSpec("n", "int", "scalar", "int", value=n), ParamSpec("nrhs", "int", "scalar", "int", value=nrhs)],
        (nrhs // block, 1, 1), (block, 1, 1))
    return State(manifest=m, original=TRSM, kernel="trsm", dialect="cuda", facts=kernel_facts(TRSM, "cuda", "trsm"))


def test_an_underfilled_launch_gets_the_smaller_blocks_first() -> None:
    prop = BuiltinProposer()
    got = [c.origin.removeprefix("pass:") for c in prop.propose(_state(8192))]
    solve = [x for x in got if x.startswith("triangular-solve-blocking")]  # this kernel's own rewrite, predicted faster still
    assert got[:len(solve)] == solve and len(solve) == 5, got  # its two strip forms and three row blocks
    got = got[len(solve):]
    assert got[:2] == ["launch-config{block=32}", "launch-config{block=64}"], got  # predicted fastest: ranked first
    assert "launch-config{block=512}" in got and got.index("launch-config{block=512}") == len(got) - 1  # 16 SMs: last


def test_a_filling_launch_is_not_offered_them() -> None:
    prop = BuiltinProposer()
    got = [c.origin.removeprefix("pass:") for c in prop.propose(_state(1 << 20))]
    assert "launch-config{block=512}" in got  # the other shapes are still tried
    assert not {"launch-config{block=32}", "launch-config{block=64}"} & set(got), got
    for step in ("launch-config{block=32}", "launch-config{block=64}"):
        assert "predicts no gain" in prop.refusals[step]


def test_round_two_adds_a_smaller_block_only_where_it_gains() -> None:
    for nrhs, wanted in ((8192, True), (1 << 20, False)):
        state = _state(nrhs)
        base = apply_pipeline("restrict-const", state)
        assert isinstance(base, Candidate)
        state.round, state.ok_candidates = 2, [(1.1, base, "restrict-const")]
        got = {c.origin.removeprefix("pass:") for c in BuiltinProposer().propose(state)}
        assert ("restrict-const,launch-config{block=32}" in got) is wanted, got
        assert "restrict-const,launch-config{block=512}" in got


def test_without_a_time_the_launch_fill_decides() -> None:
    """A size the MEP does not give (FILL-IN): the model has no trip count, so no time; the launch's fill still says
    whether the smaller blocks put more SMs to work."""
    for nrhs, wanted in ((8192, True), (1 << 20, False)):
        state = _state(nrhs, n="FILL-IN")
        assert predict(TRSM, "cuda", "trsm", state.manifest.launch.grid, (128, 1, 1), {"nrhs": nrhs}) is None
        prop = BuiltinProposer()
        got = [c.origin.removeprefix("pass:") for c in prop.propose(state)]
        assert ("launch-config{block=32}" in got and "launch-config{block=64}" in got) is wanted, got
        if not wanted:
            assert "fill does not grow" in prop.refusals["launch-config{block=32}"]


COLSUM = b"""\
__global__ void colsum(const float* a, float* out, int m, int n)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < n) {
        float s = 0.0f;
        for (int i = 0; i < m; i++)
            s += a[i * n + c];
        out[c] = s;
    }
}
"""


def test_a_tiny_launch_held_by_the_one_sm_floor_still_gets_them() -> None:
    """512 threads in 2 blocks: the model's time is floored at one SM's share for 2 and for 16 blocks alike (the same
    bytes: no access is shared by a block), so the fill, which grows with the SMs, decides."""
    m = manifest("colsum", "cuda", "kernel.cu", [
        ParamSpec("a", "const float *", "in", "float", count=4096 * 512), ParamSpec("out", "float *", "out", "float", count=512),
        ParamSpec("m", "int", "scalar", "int", value=4096), ParamSpec("n", "int", "scalar", "int", value=512)],
        (2, 1, 1), (256, 1, 1))
    state = State(manifest=m, original=COLSUM, kernel="colsum", dialect="cuda", facts=kernel_facts(COLSUM, "cuda", "colsum"))
    two = predict(COLSUM, "cuda", "colsum", (2, 1, 1), (256, 1, 1), {"m": 4096, "n": 512})
    sixteen = predict(COLSUM, "cuda", "colsum", (16, 1, 1), (32, 1, 1), {"m": 4096, "n": 512})
    assert two is not None and sixteen is not None and two.seconds == sixteen.seconds
    got = [c.origin.removeprefix("pass:") for c in BuiltinProposer().propose(state)]
    assert "launch-config{block=32}" in got and "launch-config{block=64}" in got, got


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_smaller_block_variant_builds_with_nvcc(tmp_path: Path) -> None:
    from s2s.mep.evaluate import build
    from s2s.optimize.loop import write_variant

    state = _state(8192)
    mep = make_mep(tmp_path / "mep", TRSM.decode(), state.manifest)
    cand = next(c for c in BuiltinProposer().propose(state) if c.origin == "pass:launch-config{block=32}")
    write_variant(mep, "kernel.cu", cand)
    assert cand.launch is not None and cand.launch.grid == (256, 1, 1) and cand.launch.block == (32, 1, 1)
    b = build(mep, cand.id)
    assert b.ok, b.messages
