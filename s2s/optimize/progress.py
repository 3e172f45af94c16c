"""What the optimization loop says while it runs: one event per finished candidate, one when it stops, and the line
`s2s optimize` and `s2s auto` print for each.

A candidate event: {"kind": "candidate", "kernel", "round", "candidate", "origin", "verdict", "speedup", "best",
"evals", "max_evals", "elapsed_s", "left_s" (an estimate: None before the first evaluation)}. A stop event:
{"kind": "stop", "kernel", "stopped", "note", "evals", "elapsed_s"}.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Clock:
    """The loop's time: seconds spent, the evaluations this run finished, and what that says of the time left."""
    start: float
    budget_s: float | None
    done: int = 0  # evaluations finished by this run (a resumed run's earlier ones are not timed here)
    first_at: float | None = None  # when this run's first candidate was handed to the executor
    notes: list[str] = field(default_factory=list)

    def per_eval(self, now: float) -> float | None:
        """Seconds one evaluation has taken on average in this run (None before the first)."""
        if not self.done or self.first_at is None:
            return None
        return (now - self.first_at) / self.done

    def left(self, now: float, evals_left: int) -> float | None:
        """An estimate of the seconds until the loop stops: the evaluations left at this run's pace, no more than the
        time budget leaves."""
        each = self.per_eval(now)
        est = None if each is None else each * max(0, evals_left)
        if self.budget_s is not None:
            room = max(0.0, self.budget_s - (now - self.start))
            est = room if est is None else min(est, room)
        return est

    def over(self, now: float) -> str | None:
        """Why no further candidate may start (the time budget is spent, or one more evaluation at this run's pace
        would end past it); None while there is room."""
        if self.budget_s is None:
            return None
        spent = now - self.start
        if spent >= self.budget_s:
            return f"time budget spent: {spent:.0f} s of {self.budget_s:g} s; no further candidate started"
        each = self.per_eval(now)
        if each is not None and spent + each > self.budget_s:
            return (f"time budget: {spent:.0f} s of {self.budget_s:g} s spent, and one more candidate takes about "
                    f"{each:.0f} s here; no further candidate started")
        return None


def _seconds(s: float) -> str:
    s = max(0.0, s)
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def line(ev: dict[str, Any]) -> str:
    """One progress line: kernel, candidate, verdict and speedup, the best so far, evaluations and the time left."""
    kernel = str(ev.get("kernel") or "")
    if ev.get("kind") == "stop":
        return f"{kernel}: stopped ({ev.get('stopped')}) after {ev.get('evals')} evaluations, " \
               f"{_seconds(float(ev.get('elapsed_s') or 0))}" + (f": {ev['note']}" if ev.get("note") else "")
    sp = float(ev.get("speedup") or 0.0)
    left = ev.get("left_s")
    tail = f"eval {ev.get('evals')}/{ev.get('max_evals')}" + (f", ~{_seconds(float(left))} left" if left is not None else "")
    return (f"{kernel} round {ev.get('round')} {ev.get('candidate')} {ev.get('origin')}: {ev.get('verdict')}"
            + (f" {sp:.2f}x" if sp else "") + f"   best {float(ev.get('best') or 1.0):.2f}x   {tail}")
