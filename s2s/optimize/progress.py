"""What the optimization loop says while it runs: one event per finished candidate, one when it stops, and the line
`s2s optimize` and `s2s auto` print for each.

A candidate event: {"kind": "candidate", "kernel", "round", "candidate", "origin", "verdict", "speedup", "best",
"evals", "max_evals", "elapsed_s", "left_s" (an estimate: None before the first evaluation)}. A stop event:
{"kind": "stop", "kernel", "stopped", "note", "evals", "elapsed_s"}.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from s2s.base.devicelock import blocked_s


@dataclass
class Clock:
    """The loop's time: seconds spent, the evaluations this run finished, and what that says of the time left. The
    time budget counts the tool's own time: seconds this process spent blocked by another process's hold on the
    device (devicelock.blocked_s: another `s2s auto` timing on the same GPU) are not counted, as a harness's time
    limit does not count its wait for the device."""
    start: float
    budget_s: float | None
    done: int = 0  # evaluations finished by this run (a resumed run's earlier ones are not timed here)
    first_at: float | None = None  # when this run's first candidate was handed to the executor
    notes: list[str] = field(default_factory=list)
    blocked0: float = field(default_factory=blocked_s)  # blocked seconds at the start
    first_blocked: float = field(default_factory=blocked_s)  # blocked seconds when the first candidate was handed over

    def started_first(self, now: float) -> None:
        """The first candidate is handed to the executor: the pace of evaluations counts from here."""
        self.first_at, self.first_blocked = now, blocked_s()

    def spent(self, now: float) -> float:
        """The tool's own seconds since the start (time blocked by another process's hold on the device left out)."""
        return max(0.0, now - self.start - (blocked_s() - self.blocked0))

    def per_eval(self, now: float) -> float | None:
        """Seconds one evaluation has taken on average in this run (None before the first), blocked time left out."""
        if not self.done or self.first_at is None:
            return None
        return max(0.0, now - self.first_at - (blocked_s() - self.first_blocked)) / self.done

    def left(self, now: float, evals_left: int) -> float | None:
        """An estimate of the seconds until the loop stops: the evaluations left at this run's pace, no more than the
        time budget leaves."""
        each = self.per_eval(now)
        est = None if each is None else each * max(0, evals_left)
        if self.budget_s is not None:
            room = max(0.0, self.budget_s - self.spent(now))
            est = room if est is None else min(est, room)
        return est

    def over(self, now: float) -> str | None:
        """Why no further candidate may start (the time budget is spent, or one more evaluation at this run's pace
        would end past it); None while there is room."""
        if self.budget_s is None:
            return None
        spent = self.spent(now)
        blocked = blocked_s() - self.blocked0
        waited = f" ({blocked:.0f} s waiting for the device held by another process not counted)" if blocked >= 1 else ""
        if spent >= self.budget_s:
            return f"time budget spent: {spent:.0f} s of {self.budget_s:g} s{waited}; no further candidate started"
        each = self.per_eval(now)
        if each is not None and spent + each > self.budget_s:
            return (f"time budget: {spent:.0f} s of {self.budget_s:g} s spent{waited}, and one more candidate takes "
                    f"about {each:.0f} s here; no further candidate started")
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
