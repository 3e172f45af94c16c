"""Containment: a path read from data (mep.toml, variant.json, a capture index, an origin) must stay inside the
directory it belongs to, symlinks resolved first; and text that names a file is escaped before it goes into a
generated C/C++ comment or a Makefile."""
from __future__ import annotations

import os
from pathlib import Path

from .errors import UserError


def contained(value: object, root: Path, *, entry: str, source: Path | str, line: int | None = None,
              where: str = "the MEP") -> Path:
    """`root / value` with every symlink resolved; a UserError naming `entry` in `source` when `value` is not a
    relative path or leads outside `root` (through `..` or a symlink)."""
    text = value if isinstance(value, str) else None
    if not text or "\0" in text:
        raise UserError(f"{entry} = {value!r}: a relative path inside {where}", file=str(source), line=line)
    if os.path.isabs(text):
        raise UserError(f"{entry} = {text!r}: an absolute path; it must be relative to and inside {where} ({root})",
                        file=str(source), line=line)
    base = Path(root).resolve()
    path = (base / text).resolve()
    if not path.is_relative_to(base):
        raise UserError(f"{entry} = {text!r} leads outside {where} ({base}) to {path}", file=str(source), line=line)
    return path


def inside(path: Path, root: Path) -> bool:
    """Whether `path` (resolved, symlinks followed) is `root` or lies under it."""
    return Path(path).resolve().is_relative_to(Path(root).resolve())


def comment_text(text: str) -> str:
    """`text` fit for a `//` or `/* */` comment: no line break, no line splice (a trailing backslash), no `*/`."""
    out = []
    for ch in str(text):
        if ch == "\\":
            out.append("\\x5c")
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        else:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}")
    return "".join(out).replace("*/", "*\\x2f")


def make_text(text: str) -> str:
    """`text` as a literal in a Makefile variable or rule: `$` doubled, `#` escaped; line breaks are refused earlier."""
    return str(text).replace("$", "$$").replace("#", "\\#").replace("\n", " ").replace("\r", " ")


def symlink_loop(root: Path) -> str | None:
    """The first symlink under `root` (relative path and target) that loops when followed: a directory link to one
    of its own ancestors, or a link that resolves to itself. None when there is none."""
    root = Path(root)
    for dirpath, dirs, files in os.walk(root):
        here = Path(dirpath)
        for name in dirs + files:
            p = here / name
            if not p.is_symlink():
                continue
            rel = p.relative_to(root).as_posix()
            try:
                target = p.resolve(strict=False)
            except (RuntimeError, OSError):
                return f"{rel} -> {os.readlink(p)}"
            if target.is_dir() and here.resolve().is_relative_to(target):
                return f"{rel} -> {os.readlink(p)}"
    return None
