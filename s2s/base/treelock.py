"""One in-place change per application tree at a time: an exclusive flock on the tree's directory itself (nothing is
written into the tree for it), released by the kernel when the holder exits in any way. `--force` does not bypass it."""
from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import UserError


@contextmanager
def tree_lock(tree: Path) -> Iterator[None]:
    try:
        fd = os.open(Path(tree), os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise UserError(f"cannot open the application tree: {exc.strerror}", file=str(tree)) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError("another s2s reintegrate --in-place or --restore is changing this tree now; nothing was changed",
                            file=str(tree), hint="wait for it to finish, then run again") from None
        yield
    finally:
        os.close(fd)  # closing the only descriptor releases the lock


def tree_busy(tree: Path) -> bool:
    """Whether another process holds `tree_lock(tree)` now."""
    try:
        fd = os.open(Path(tree), os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
