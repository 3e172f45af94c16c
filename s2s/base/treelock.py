"""One in-place change per application tree at a time: an exclusive flock on the tree's directory itself and on the
directory of every file it changes (nothing is written into the tree for it), released by the kernel when the holder
exits in any way. The directories of the files make two runs through nested trees (`--tree /a` and `--tree /a/sub`)
that change one file exclusive too. `--force` does not bypass it."""
from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import UserError


@contextmanager
def tree_lock(tree: Path, *dirs: Path) -> Iterator[None]:
    """Hold the locks of `tree` and of `dirs` (the directories of the files about to change), or refuse at once."""
    fds: list[int] = []
    try:
        seen: set[Path] = set()
        for d in [Path(tree), *sorted(Path(d) for d in dirs)]:
            real = d.resolve()
            if real in seen:
                continue
            seen.add(real)
            try:
                fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY)
            except OSError as exc:
                raise UserError(f"cannot open the application tree: {exc.strerror}", file=str(d)) from None
            fds.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UserError("another s2s reintegrate --in-place or --restore is changing this tree now; nothing was "
                                "changed", file=str(tree), hint="wait for it to finish, then run again") from None
        yield
    finally:
        for fd in fds:
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
