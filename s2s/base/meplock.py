"""One `s2s optimize` per MEP at a time: an exclusive flock on `MEP/.s2s.lock`, released by the kernel when the
holder exits in any way (kill -9 included)."""
from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import UserError

LOCK = ".s2s.lock"


@contextmanager
def mep_lock(mep_dir: Path, *, wait: bool = False, what: str = "s2s optimize", place: str = "MEP") -> Iterator[None]:
    path = Path(mep_dir) / LOCK
    try:
        fh = open(path, "a+")
    except OSError as exc:  # a read-only MEP or a full disk: say so, not "damaged"
        raise UserError(f"cannot write in the {place} ({exc.strerror}); {what} keeps its lock"
                        + (" and history there" if place == "MEP" else " there"),
                        file=str(mep_dir), hint="make it writable, or copy the MEP somewhere writable") from None
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                fh.seek(0)
                pid, _sep, holder = fh.read().strip().partition(": ")
                raise UserError(f"another {holder or what} is running on this {place}" + (f" ({pid})" if pid else ""),
                                file=str(mep_dir), hint="wait for it to finish, or pass --wait to queue behind it") from None
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}: {what}\n")
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


_held: dict[tuple[str, int], int] = {}  # (MEP, thread) -> depth: the holder may enter again (a call that recurses)


def exclusive(fn):  # type: ignore[no-untyped-def]
    """Decorate `fn(mep, opts, ...)`: it runs holding the MEP's lock (`opts.wait_lock`: wait for it, else exit 2)."""
    import functools
    import threading

    @functools.wraps(fn)
    def wrapper(mep, opts, *args, **kwargs):  # type: ignore[no-untyped-def]
        key = (str(Path(mep).resolve()), threading.get_ident())
        if key in _held or not Path(mep).is_dir():  # a missing MEP: `fn` says so
            return fn(mep, opts, *args, **kwargs)
        with mep_lock(Path(mep), wait=bool(getattr(opts, "wait_lock", False))):
            _held[key] = 1
            try:
                return fn(mep, opts, *args, **kwargs)
            finally:
                del _held[key]

    return wrapper
