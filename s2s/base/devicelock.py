"""One timing on a device at a time, across processes: builds and checks run side by side, timings never overlap
anything that uses the device.

The lock is a file (S2S_DEVICE_LOCK, else s2s-device.lock in the temporary directory) taken with flock: shared by
checks, exclusive by timings. A second file, PATH.turn, is the turnstile that gives a waiting timing precedence over
checks that arrive after it (writer preference): every taker passes through the turnstile before it waits on the
lock, and a timing holds the turnstile until it has the lock. The MEP harnesses take the same two files themselves
(templates/s2s_harness_common.cuh, s2s/mep/backends/opencl_runner.py) when S2S_HARNESS_LOCK names the lock: checks
shared, the timing exclusive; while a harness waits it prints the phase WAIT_PHASE, which the harness's time limit
does not count.
"""
from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HARNESS_ENV = "S2S_HARNESS_LOCK"  # the harness takes the lock itself (checks shared, timing exclusive)
WAIT_PHASE = "waiting for the device"  # the phase a harness prints while it waits for the lock


def lock_path() -> Path:
    return Path(os.environ.get("S2S_DEVICE_LOCK") or Path(tempfile.gettempdir()) / "s2s-device.lock")


@contextmanager
def device_lock(*, shared: bool = False) -> Iterator[None]:
    """The device for this block: exclusive (a timing, a profile, a whole evaluation), or `shared` with other checks."""
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh, open(f"{path}.turn", "a+") as turn:
        fcntl.flock(turn.fileno(), fcntl.LOCK_EX)
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        finally:
            fcntl.flock(turn.fileno(), fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
