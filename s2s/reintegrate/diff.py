"""Unified diffs of source files as bytes: a file in any encoding (`s2s.base.encoding`) gives a diff whose lines are
the file's own bytes, so that `git apply` and `patch` find them."""
from __future__ import annotations

import difflib
from pathlib import Path

NO_NEWLINE = b"\n\\ No newline at end of file\n"


def file_diff(old: bytes, new: bytes, rel: str) -> bytes:
    """The unified diff of one file (b"" when unchanged), with a/ and b/ prefixes."""
    if old == new:
        return b""
    name = rel.encode("utf-8", "surrogateescape")
    lines = list(difflib.diff_bytes(difflib.unified_diff, old.splitlines(keepends=True), new.splitlines(keepends=True),
                                    fromfile=b"a/" + name, tofile=b"b/" + name))
    out = b""
    for line in lines:  # the last line of a file without a final newline
        out += line if line.endswith(b"\n") else line + NO_NEWLINE
    return out


def tree_diff(orig: Path, new: Path, skip: tuple[str, ...] = (".s2s-backup",)) -> bytes:
    """The diff of every regular file of the copy `new` that differs from the same file of `orig` (files only in the
    copy, links and directories named in `skip` are left out)."""
    out: list[bytes] = []
    for path in sorted(new.rglob("*")):
        if path.is_symlink() or not path.is_file() or any(part in skip for part in path.relative_to(new).parts):
            continue
        rel = path.relative_to(new)
        o = orig / rel
        if o.is_symlink() or not o.is_file():
            continue
        out.append(file_diff(o.read_bytes(), path.read_bytes(), rel.as_posix()))
    return b"".join(out)
