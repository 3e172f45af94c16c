"""Issue 26: `auto --time-budget` bounds the whole command. Measured on development applications whose own run takes
about 25 s (one H200): the optimizations spent the budget, then the loop's capture and replay, the before/after
comparison (two builds, a warm-up and three timed runs each) and the instrumented run after took the command 100+ s past
its budget and past the benchmark's deadline. The optimizations now leave the cheapest finish and the comparison takes
the timed runs the budget has room for."""
from __future__ import annotations

import pytest

from s2s.auto import _budget_left, _Finish, _seconds_left
from s2s.base.devicelock import OwnClock
from s2s.optimize.loop import Options


def test_the_reserve_is_the_cheapest_finish_with_the_loops_when_one_qualifies() -> None:
    app = _Finish(build_s=4.0, run_s=25.0, runs=3, loops=False)
    # before/after builds, a warm-up and one timed run each, then the instrumented build and run after
    assert app.reserve_s() == pytest.approx(2 * 4 + 4 * 25 + 4 + 25)
    looped = _Finish(build_s=4.0, run_s=25.0, runs=3, loops=True)
    assert looped.reserve_s() == pytest.approx(app.reserve_s() + 4 + 25 + _Finish.SEQUENCE_REPLAY_S)


def test_the_comparison_takes_the_runs_that_fit_at_least_one_at_most_asked() -> None:
    app = _Finish(build_s=4.0, run_s=25.0, runs=3, loops=False)
    assert app.runs_within(None) == 3 and app.runs_within(1e6) == 3
    assert app.runs_within(app.compare_s(2) + 1) == 2 and app.runs_within(app.compare_s(1)) == 1
    assert app.runs_within(0.0) == 1  # one run each still compares the outputs: the check is never skipped


def test_the_optimizations_get_the_budget_less_the_reserve_and_no_budget_stays_none() -> None:
    clock = OwnClock()
    opts = _budget_left(Options(time_budget_s=420.0), clock, reserve_s=190.0)
    assert opts.time_budget_s is not None and 229.0 < opts.time_budget_s <= 230.0
    assert _budget_left(Options(time_budget_s=100.0), clock, reserve_s=190.0).time_budget_s == pytest.approx(1e-3)
    assert _budget_left(Options(), clock, reserve_s=190.0).time_budget_s is None
    assert _seconds_left(Options(), clock) is None
    left = _seconds_left(Options(time_budget_s=50.0), clock)
    assert left is not None and 49.0 < left <= 50.0
