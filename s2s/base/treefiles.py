"""Reading and copying an application tree's files without blocking, running away, or leaving the tree.

`read_regular` reads a file only if it is a regular file when opened, and only up to a size cap: a FIFO in the tree
would block a plain read forever, a link to /dev/zero never ends, a sparse 10 GB file costs 10 GB.

`copy_tree` copies a tree for a build of our own. Regular files are copied; directories are walked without following links; a symlink stays a symlink and is never
read through: one that points inside the tree points to the same file of the copy, one that leaves the tree (a
linked `/etc`, a system include directory) points where it pointed, and a dangling one is copied as it is. FIFOs,
sockets and devices are left out (opening a FIFO would block), as is the destination itself when it lies in the
tree. What was left out is returned, one line each.

`write_in_copy` changes a file of such a copy without writing through a link (a link out of the tree in the copy
still names the user's file), and `owner_writable` lets a read-only tree's copy take the build's outputs.
"""
from __future__ import annotations

import errno
import fnmatch
import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from s2s.base.errors import UserError


def copy_tree(src: Path, dst: Path, ignore: Iterable[str] = (".git", ".hg", ".svn")) -> list[str]:
    """Copy the tree `src` to `dst` (which must not exist yet); names matching a pattern of `ignore` (fnmatch) are
    left out. Returns what was left out besides them: `rel: why`."""
    src, dst = Path(src).resolve(), Path(os.path.abspath(dst))
    patterns = tuple(ignore)
    skipped: list[str] = []
    real_dst = Path(os.path.realpath(dst))
    os.makedirs(dst)
    stack = [""]
    while stack:
        rel = stack.pop()
        here = src / rel if rel else src
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            skipped.append(f"{rel or '.'}: not read ({exc.strerror})")
            continue
        for e in entries:
            if any(fnmatch.fnmatch(e.name, p) for p in patterns):
                continue
            item = f"{rel}/{e.name}" if rel else e.name
            target = dst / item
            try:
                st = e.stat(follow_symlinks=False)
            except OSError as exc:
                skipped.append(f"{item}: not read ({exc.strerror})")
                continue
            if stat.S_ISLNK(st.st_mode):
                _copy_link(src, dst, Path(e.path), target)
            elif stat.S_ISDIR(st.st_mode):
                if Path(os.path.realpath(e.path)) == real_dst:
                    continue  # the copy itself, made inside the tree
                os.mkdir(target)
                stack.append(item)
            elif stat.S_ISREG(st.st_mode):
                why = copy_regular(Path(e.path), target)
                if why:
                    skipped.append(f"{item}: {why}")
            else:
                skipped.append(f"{item}: {special_kind(st.st_mode)}, not copied")
    for rel in _dirs_bottom_up(dst):  # directories get their modes and times once their contents are in
        try:
            shutil.copystat(src / rel, dst / rel, follow_symlinks=False)
        except OSError:
            pass
    return skipped


def _dirs_bottom_up(dst: Path) -> list[str]:
    out = []
    for dirpath, dirs, _files in os.walk(dst):
        for d in dirs:
            if not os.path.islink(os.path.join(dirpath, d)):
                out.append(os.path.relpath(os.path.join(dirpath, d), dst))
    return sorted(out, key=lambda r: -r.count(os.sep))


def _copy_link(src: Path, dst: Path, link: Path, target: Path) -> None:
    """A link inside the tree keeps pointing inside (relative, so into the copy); any other keeps its destination."""
    written = os.readlink(link)
    resolved = Path(os.path.normpath(os.path.join(os.path.dirname(link), written)))
    real = Path(os.path.realpath(link))
    if real.is_relative_to(src) and resolved.is_relative_to(src):
        new = os.path.relpath(resolved, os.path.dirname(link))
    elif os.path.isabs(written):
        new = written
    else:
        new = str(resolved)  # a relative link out of the tree: the same place, from the copy too
    os.symlink(new, target)


class CopyUnwritable(OSError):
    """The copy itself could not be written (a full disk, a quota): raised, never a note, since the copy would be
    incomplete."""


def copy_regular(path: Path, target: Path) -> str:
    """Copy one file if it is a regular file when opened (never blocks on a FIFO swapped in); "" or why not. A source
    that cannot be read is a note; a copy that cannot be written raises CopyUnwritable naming it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return f"not read ({exc.strerror})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return f"{special_kind(st.st_mode)}, not copied"
        try:
            out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            raise CopyUnwritable(exc.errno, exc.strerror, str(target)) from None
        try:
            _copy_data(fd, out, st.st_size, target)
        finally:
            os.close(out)
    except CopyUnwritable:
        raise
    except OSError as exc:
        return f"not copied ({exc.strerror})"
    finally:
        os.close(fd)
    shutil.copystat(path, target, follow_symlinks=False)
    return ""


def _copy_data(src: int, dst: int, size: int, name: Path) -> None:
    """Copy the data of a file, skipping its holes (a sparse 10 GB file costs what it holds, and stays sparse)."""
    pos = 0
    try:
        spans = []
        while pos < size:
            try:
                start = os.lseek(src, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # only a hole is left
                    break
                raise
            end = os.lseek(src, start, os.SEEK_HOLE)
            spans.append((start, min(end, size)))
            pos = end
    except (OSError, AttributeError):  # no SEEK_DATA here: the whole file
        spans = [(0, size)]
    for start, end in spans:
        at = start
        while at < end:
            chunk = os.pread(src, min(1 << 20, end - at), at)
            if not chunk:
                break
            _write_at(dst, chunk, at, name)
            at += len(chunk)
    try:
        os.ftruncate(dst, size)
    except OSError as exc:
        raise CopyUnwritable(exc.errno, exc.strerror, str(name)) from None


def _write_at(dst: int, data: bytes, at: int, name: Path) -> None:
    """All of `data` at offset `at` (a short write continues where it stopped)."""
    view = memoryview(data)
    while view:
        try:
            n = os.pwrite(dst, view, at)
        except OSError as exc:
            raise CopyUnwritable(exc.errno, exc.strerror, str(name)) from None
        view, at = view[n:], at + n


MAX_SOURCE = 64 << 20  # a source file larger than this is generated data, not code to scan


def read_regular(path: str | Path, limit: int = MAX_SOURCE) -> tuple[bytes | None, str, os.stat_result | None]:
    """(bytes, "", stat) of a regular file (symlinks followed) of at most `limit` bytes, else (None, why, stat or
    None). Opened without blocking, so a FIFO is reported, not waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return None, f"unreadable: {exc.strerror}", None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, f"{special_kind(st.st_mode)}, not a regular file; not read", st
        if st.st_size > limit:
            return None, f"{st.st_size:,} bytes, over the {_size(limit)} limit for a source file; not read", st
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            return None, f"grew past the {_size(limit)} limit for a source file while it was read; not read", st
        return b"".join(chunks), "", st
    except OSError as exc:
        return None, f"unreadable: {exc.strerror}", None
    finally:
        os.close(fd)


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n % (1 << 20) == 0 else f"{n:,}-byte"


def special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def owner_writable(root: Path) -> None:
    """Give the owner write permission on every directory and file of a copy (not through symlinks): a read-only
    tree's copy must take the instrumented sources, the reintegrated kernels and the build's outputs."""
    for dirpath, dirs, files in os.walk(root):
        for name in [*dirs, *files, ""]:
            p = os.path.join(dirpath, name) if name else dirpath
            st = os.lstat(p)
            if not stat.S_ISLNK(st.st_mode) and not st.st_mode & stat.S_IWUSR:
                os.chmod(p, stat.S_IMODE(st.st_mode) | stat.S_IWUSR)


def read_in_copy(path: Path) -> bytes:
    """A source file of a copy, read as scan reads it (regular files only, up to the cap); OSError naming it if not."""
    data, why, _st = read_regular(path)
    if data is None:
        raise OSError(errno.EIO, why, str(path))
    return data


def write_in_copy(root: Path, rel: str, data: bytes) -> None:
    """Write `data` as the file `rel` of the copy `root`. A symlink there is replaced by a regular file, never written
    through: the copy keeps links as they were, and one leaving the tree still names a file of the user's. A file
    whose directory lies outside the copy (reached through a linked directory) is refused."""
    path = Path(root) / rel
    real_root = Path(os.path.realpath(root))
    if not Path(os.path.realpath(path.parent)).is_relative_to(real_root):
        raise UserError(f"its directory is a link leaving the work copy {root}; s2s does not write through it",
                        file=str(path), hint="replace the linked directory in the tree by a real one to have it changed")
    if path.is_symlink():
        path.unlink()
    path.write_bytes(data)
