"""One evaluation on a device at a time, across processes: builds run in parallel, timings never overlap."""
from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def lock_path() -> Path:
    return Path(os.environ.get("S2S_DEVICE_LOCK") or Path(tempfile.gettempdir()) / "s2s-device.lock")


@contextmanager
def device_lock() -> Iterator[None]:
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
