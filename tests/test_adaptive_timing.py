"""Evaluation cost follows the kernel's duration (issue 26, item 2): a long kernel is timed in fewer alternated pairs
(at least three, and fewer warm-ups), a short one in timing.repetitions; the CUDA harness carries the same rule and
still builds with nvcc; `optimize --time-budget` stops starting candidates once the budget is spent, and its progress
lines name the kernel, the candidate and the time left. Our own OpenCL kernel with a tunable loop count, on PoCL."""
from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import needs_nvcc
from mep_util import ParamSpec, make_mep, manifest

from s2s.base.errors import UserError
from s2s.mep.backends.opencl_runner import MIN_TIMED_PAIRS, timed_pairs, warm_more
from s2s.mep.evaluate import build, evaluate
from s2s.mep.manifest import load, save
from s2s.optimize.loop import Options, optimize
from s2s.optimize.progress import Clock, line

SPIN = r'''
/* every work item runs a dependent chain of `iters` multiply-adds: the launch takes as long as iters says */
__kernel void spin(__global const float* x, __global float* out, const int n, const int iters)
{
    int i = get_global_id(0);
    if (i >= n) return;
    float v = x[i];
    for (int k = 0; k < iters; ++k) v = v * 0.9999f + 0.0001f;
    out[i] = v;
}
'''
N = 256
REPS = 12
LONG_ITERS = 250_000  # at 100,000 a launch took 14-42 ms on PoCL here and the test needs more than 20 ms


def spin_manifest(iters: int, **kw: object):  # type: ignore[no-untyped-def]
    m = manifest("spin", "opencl", "kernel.cl", [
        ParamSpec("x", "__global const float*", "in", "float", count=N, space="global"),
        ParamSpec("out", "__global float*", "out", "float", count=N, space="global"),
        ParamSpec("n", "const int", "scalar", "int", value=N),
        ParamSpec("iters", "const int", "scalar", "int", value=iters),
    ], (N, 1, 1), (64, 1, 1), repetitions=REPS, warmup=3, timeout_s=120.0)
    return replace(m, **kw)


# -- the rule itself --------------------------------------------------------------------------------------
def test_pairs_follow_the_pair_time_within_their_bounds() -> None:
    assert timed_pairs(20.0, 30, 0.5) == 30  # a 10 µs kernel: the full count
    assert timed_pairs(100_000.0, 30, 0.5) == 5  # 0.1 s a pair: as many as fit half a second
    assert timed_pairs(2_000_000.0, 30, 0.5) == MIN_TIMED_PAIRS == 3  # 1 s a launch: never fewer than three
    assert timed_pairs(2_000_000.0, 2, 0.5) == 2  # never more than configured
    assert timed_pairs(2_000_000.0, 30, 0.0) == 30  # target 0: the fixed count
    assert warm_more([], [], 0.5)  # a first warm-up pair always
    assert warm_more([1000.0], [1000.0], 0.5)  # 4 ms of warm-up: room for more
    assert not warm_more([100_000.0], [100_000.0], 0.5)  # a second 0.2 s pair would pass a quarter of the target
    assert warm_more([100_000.0], [100_000.0], 0.0)


def test_target_s_is_written_read_and_checked(tmp_path: Path) -> None:
    mep = make_mep(tmp_path / "mep", SPIN, spin_manifest(1, target_s=0.25))
    assert "target_s = 0.25" in (mep / "mep.toml").read_text()
    assert load(mep).target_s == 0.25
    save(replace(load(mep), target_s=-1.0), mep)
    with pytest.raises(UserError) as err:
        build(mep, None)
    assert "timing.target_s" in err.value.message and err.value.line is not None


# -- OpenCL on PoCL -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_long_kernel_gets_fewer_pairs_short_one_the_full_count(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    short = evaluate(make_mep(tmp_path / "short", SPIN, spin_manifest(1, target_s=0.3)), None)
    assert short.verdict == "ok", short.messages
    assert short.ref and short.var and short.ref.samples == short.var.samples == REPS
    assert short.ref.warmup == 3
    assert any(f"timed {REPS} alternated pairs after 3 warm-up" in m for m in short.messages), short.messages

    long = evaluate(make_mep(tmp_path / "long", SPIN, spin_manifest(LONG_ITERS, target_s=0.3)), None)
    assert long.verdict == "ok", long.messages
    assert long.ref and long.var and long.ref.median_us > 20_000, long.ref  # the kernel is long here
    assert MIN_TIMED_PAIRS <= long.ref.samples == long.var.samples < REPS
    assert 1 <= long.ref.warmup < 3
    said = next(m for m in long.messages if "alternated pairs of at most" in m)
    assert f"timed {long.ref.samples} alternated pairs of at most {REPS}" in said and "timing.target_s = 0.3 s" in said
    # every output element written on its first run: the reference runs once per input set, not twice
    assert any("the reference ran once per input set" in m for m in long.messages), long.messages
    # the same kernel with target_s 0: the fixed count (what every MEP did before)
    fixed = evaluate(make_mep(tmp_path / "fixed", SPIN, spin_manifest(LONG_ITERS, target_s=0.0, repetitions=4)), None)
    assert fixed.ref and fixed.ref.samples == 4 and fixed.ref.warmup == 3


@pytest.mark.slow
def test_reference_runs_twice_where_an_output_element_keeps_the_poison(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    half = SPIN.replace("if (i >= n) return;", "if (i >= n || i % 2) return;")  # odd elements left alone
    mep = make_mep(tmp_path / "half", half, spin_manifest(1, repetitions=3),
                   variants={"writes_all": half.replace("i % 2", "0"), "same": half.replace("++k", "k++")})
    m = evaluate(mep, "same")
    assert m.verdict == "ok", m.messages
    assert not any("the reference ran once per input set" in x for x in m.messages), m.messages
    wrong = evaluate(mep, "writes_all")  # it writes what the reference leaves alone: told by the second poison
    assert wrong.verdict == "wrong-output", wrong.messages


def _replay(tmp_path: Path, count: int) -> Path:
    """`count` distinct, equivalent spellings of the kernel (the loop's step written differently)."""
    steps = ["k++", "k += 1", "k = k + 1", "k -= -1", "k = 1 + k", "k = k - -1"][:count]
    answers = [{"round": 1, "answer": "```c\n" + SPIN.replace("++k", s).strip() + "\n```"} for s in steps]
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(a) for a in answers) + "\n")
    return path


@pytest.mark.slow
def test_progress_names_kernel_candidate_and_time_left(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    mep = make_mep(tmp_path / "mep", SPIN, spin_manifest(1, repetitions=5))
    events: list[dict[str, object]] = []
    out = optimize(mep, Options(proposer="replay", replay_file=str(_replay(tmp_path, 2)), rounds=1, max_evals=5,
                                use_patterns=False), progress=events.append)
    cands = [e for e in events if e.get("kind") == "candidate"]
    assert len(cands) == out.evaluations == 2
    assert all(e["kernel"] == "spin" and e["max_evals"] == 5 and isinstance(e["left_s"], float) for e in cands)
    text = line(cands[0])
    assert text.startswith(f"spin round 1 {cands[0]['candidate']} ") and "eval 1/5, ~" in text and " left" in text
    assert events[-1]["kind"] == "stop" and events[-1]["stopped"] == out.stopped
    from s2s.optimize.report import build_report

    md = build_report(mep)[0].read_text()  # the report says how many pairs each timing took, and by what rule
    assert "Timing: 5 alternated pairs (reference, variant) per timed candidate after " in md
    assert "timing.target_s = 0.5 s of device time, at least 3, at most timing.repetitions = 5" in md


@pytest.mark.slow
def test_time_budget_stops_a_long_kernel_starting_candidates(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    mep = make_mep(tmp_path / "mep", SPIN, spin_manifest(LONG_ITERS, target_s=0.3))
    events: list[dict[str, object]] = []
    budget = 4.0  # the noise band of the original (three timings) alone takes about this long here
    out = optimize(mep, Options(proposer="replay", replay_file=str(_replay(tmp_path, 6)), rounds=1, max_evals=6,
                                use_patterns=False, time_budget_s=budget), progress=events.append)
    assert out.stopped == "time-budget" and out.evaluations < 6, out
    assert out.notes and "time budget" in out.notes[0] and "no further candidate started" in out.notes[0]
    stop = events[-1]
    assert stop["kind"] == "stop" and "time budget" in line(stop) and line(stop).startswith("spin: stopped (time-budget)")
    # the candidates not started are left for a later run: registered, never evaluated
    assert sum(1 for r in out.rows if r.status == "pending") == 6 - out.evaluations


def test_clock_stops_before_a_candidate_that_would_end_past_the_budget() -> None:
    c = Clock(start=0.0, budget_s=100.0)
    assert c.over(10.0) is None and c.left(10.0, 5) == 90.0  # no pace yet: the budget's room
    c.first_at, c.done = 10.0, 2  # two evaluations of 30 s each
    assert c.left(70.0, 10) == 30.0  # ten more would take 300 s; the budget leaves 30
    assert c.over(60.0) is None  # 60 + 30 fits
    why = c.over(75.0)  # 75 + 37.5 would not
    assert why and "one more candidate takes about" in why
    assert "time budget spent" in (c.over(100.0) or "")
    free = Clock(start=0.0, budget_s=None, first_at=0.0, done=4)
    assert free.over(1e6) is None and free.left(40.0, 3) == 30.0


def test_auto_budget_counts_from_its_start_over_every_kernel() -> None:
    import time

    from s2s.auto import _budget_left
    from s2s.base.devicelock import OwnClock

    opts = Options(time_budget_s=100.0)
    later = _budget_left(opts, OwnClock(time.monotonic() - 30.0))  # a kernel optimized 30 s after auto started gets what is left
    assert later.time_budget_s is not None and 69.0 < later.time_budget_s <= 70.0
    spent = _budget_left(opts, OwnClock(time.monotonic() - 500.0))  # spent: the loop starts no candidate (Clock.over says why)
    assert spent.time_budget_s is not None and spent.time_budget_s <= 1e-3
    assert Clock(start=0.0, budget_s=spent.time_budget_s).over(0.5)
    assert _budget_left(Options(), OwnClock(time.monotonic() - 500.0)).time_budget_s is None


# -- CUDA: the same rule in the generated harness, built with nvcc ----------------------------------------
CUDA_SPIN = r'''
__global__ void spin(const float* x, float* out, int n, int iters)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int k = 0; k < iters; ++k) v = v * 0.9999f + 0.0001f;
    out[i] = v;
}
'''


@pytest.mark.slow
@needs_nvcc
def test_cuda_harness_takes_target_s_and_builds(tmp_path: Path) -> None:
    m = manifest("spin", "cuda", "kernel.cu", [
        ParamSpec("x", "const float *", "in", "float", count=N),
        ParamSpec("out", "float *", "out", "float", count=N),
        ParamSpec("n", "int", "scalar", "int", value=N),
        ParamSpec("iters", "int", "scalar", "int", value=LONG_ITERS),
    ], (4, 1, 1), (64, 1, 1), repetitions=REPS, target_s=0.25, timeout_s=60.0)
    mep = make_mep(tmp_path / "mep", CUDA_SPIN, m)
    b = build(mep, None)
    assert b.ok, (b.messages, b.log[-2000:])
    text = (mep / "harness.cu").read_text()
    assert "spec.defaults.target_s = 0.25;" in text and f"spec.defaults.reps = {REPS};" in text
    usage = subprocess.run([str(mep / "build" / "ref" / "harness"), "--help"], capture_output=True, text=True)
    assert "--target-s X" in usage.stderr


RULE_MAIN = r'''
#include "s2s_harness_common.cuh"
int main() {
    const double pairs[] = {0.5, 20.0, 16000.0, 16700.0, 100000.0, 333333.0, 2e6, 5e7};
    const int maxes[] = {1, 2, 3, 12, 30};
    const double targets[] = {0.0, 0.2, 0.5, 3.0};
    for (double p : pairs) for (int m : maxes) for (double t : targets) {
        std::vector<double> one{p / 2}, other{p / 2};
        printf("%g %d %g %d %d\n", p, m, t, s2s::timed_pairs(p, m, t), (int)s2s::warm_more(one, other, t));
    }
    return 0;
}
'''


@pytest.mark.slow
@needs_nvcc
def test_the_cuda_harness_rule_is_the_opencl_runners(tmp_path: Path) -> None:
    """The rule compiled from the CUDA harness's own header (host code only: no GPU needed) gives the OpenCL runner's
    pairs and warm-up decisions on a grid of pair times, maxima and targets."""
    from s2s.base.resources import templates_dir

    (tmp_path / "rule.cu").write_text(RULE_MAIN)
    built = subprocess.run(["nvcc", "-std=c++17", "-I", str(templates_dir()), "-o", str(tmp_path / "rule"),
                            str(tmp_path / "rule.cu")], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    out = subprocess.run([str(tmp_path / "rule")], capture_output=True, text=True, timeout=60).stdout.split("\n")
    rows = [ln.split() for ln in out if ln.strip()]
    assert len(rows) == 8 * 5 * 4
    for p, m, t, pairs, warm in rows:
        assert int(pairs) == timed_pairs(float(p), int(m), float(t)), (p, m, t)
        assert bool(int(warm)) == warm_more([float(p) / 2], [float(p) / 2], float(t)), (p, m, t)
