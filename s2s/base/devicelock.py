"""One timing on a device at a time, across processes: builds and checks run side by side, timings never overlap
anything that uses the device.

The lock is a file (S2S_DEVICE_LOCK, else s2s-device.lock in the temporary directory) taken with flock: shared by
checks, exclusive by timings. A second file, PATH.turn, is the turnstile that gives a waiting timing precedence over
checks that arrive after it (writer preference): every taker passes through the turnstile before it waits on the
lock, and a timing holds the turnstile until it has the lock. The MEP harnesses take the same two files themselves
(templates/s2s_harness_common.cuh, s2s/mep/backends/opencl_runner.py) when S2S_HARNESS_LOCK names the lock: checks
shared, the timing exclusive; while a harness waits it prints the phase WAIT_PHASE, which the harness's time limit
does not count.

This process keeps the seconds it spent blocked by another process's hold on the device (`blocked_s`): time during
which at least one of its device users (a `device_lock` block, a harness between its wait and hold phases) waited and
none held the device. `OwnClock` is a clock that does not count them: `--time-budget` measures the tool's own time, as
a harness's time limit does, so that several `s2s auto` sharing one GPU each get what they asked for. A wait in
another process of ours (a Dask or Slurm worker) is not seen here and counts as the tool's own time.
"""
from __future__ import annotations

import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HARNESS_ENV = "S2S_HARNESS_LOCK"  # the harness takes the lock itself (checks shared, timing exclusive)
WAIT_PHASE = "waiting for the device"  # the phase a harness prints while it waits for the lock


class _Blocked:
    """The seconds this process had device users waiting and none holding the device."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.waiting = self.holding = 0
        self.total = 0.0
        self.since: float | None = None  # when the current blocked stretch began

    def change(self, waiting: int = 0, holding: int = 0) -> None:
        with self._lock:
            now = time.monotonic()
            if self.since is not None:
                self.total += now - self.since
            self.waiting = max(0, self.waiting + waiting)
            self.holding = max(0, self.holding + holding)
            self.since = now if self.waiting and not self.holding else None

    def seconds(self) -> float:
        with self._lock:
            return self.total + (time.monotonic() - self.since if self.since is not None else 0.0)


_BLOCKED = _Blocked()


def blocked_s() -> float:
    """Seconds this process has spent blocked by another process's hold on the device, so far."""
    return _BLOCKED.seconds()


def note_wait(started: bool) -> None:
    """One of this process's device users began (`started`) or stopped waiting for the device."""
    _BLOCKED.change(waiting=1 if started else -1)


def note_hold(started: bool) -> None:
    """One of this process's device users began (`started`) or stopped holding the device."""
    _BLOCKED.change(holding=1 if started else -1)


class OwnClock:
    """Seconds since it was made, less those this process spent blocked by another process's hold on the device."""

    def __init__(self, start: float | None = None) -> None:
        self.start = time.monotonic() if start is None else start
        self.blocked0 = blocked_s()

    def blocked(self) -> float:
        """Seconds blocked by another process since this clock's start."""
        return blocked_s() - self.blocked0

    def own(self, now: float | None = None) -> float:
        """Seconds of the tool's own time since the start."""
        return max(0.0, (time.monotonic() if now is None else now) - self.start - self.blocked())


def lock_path() -> Path:
    return Path(os.environ.get("S2S_DEVICE_LOCK") or Path(tempfile.gettempdir()) / "s2s-device.lock")


@contextmanager
def device_lock(*, shared: bool = False) -> Iterator[None]:
    """The device for this block: exclusive (a timing, a profile, a whole evaluation), or `shared` with other checks."""
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh, open(f"{path}.turn", "a+") as turn:
        note_wait(True)
        try:
            fcntl.flock(turn.fileno(), fcntl.LOCK_EX)
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
                note_hold(True)
            finally:
                fcntl.flock(turn.fileno(), fcntl.LOCK_UN)
        finally:
            note_wait(False)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            note_hold(False)
