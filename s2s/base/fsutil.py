"""Atomic file writes (a reader sees the old file or the new one, never half of either), and moving a tree's entries
into another without copying where both are on one file system."""
from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in its directory. An OSError names `path` (a full disk's
    ENOSPC from a write or fsync names no file by itself)."""
    path = Path(path)
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename != str(path):
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise


def move_into(src: Path, dst: Path) -> None:
    """Every entry of the directory `src` into `dst`, replacing what `dst` holds under the same name and merging
    directories (as copytree(..., dirs_exist_ok=True) does): renamed where both are on one file system, so that
    gigabytes of captured data are not written a second time; copied (then removed from `src`) across file systems."""
    src, dst = Path(src), Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    for entry in sorted(src.iterdir()):
        target = dst / entry.name
        if entry.is_dir() and not entry.is_symlink() and target.is_dir() and not target.is_symlink():
            move_into(entry, target)
            continue
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        try:
            os.replace(entry, target)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            if entry.is_dir() and not entry.is_symlink():
                shutil.copytree(entry, target, symlinks=True)
                shutil.rmtree(entry)
            else:
                shutil.copy2(entry, target, follow_symlinks=False)
                entry.unlink()
