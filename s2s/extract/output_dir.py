"""Where `extract -o` may write: outside the application tree, into a new or empty directory or an MEP of the same
kernel; anything else is refused unless `--force` (which empties it first: an old MEP's history and variants go)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import tomllib

from s2s.base.errors import UserError
from s2s.base.meplock import LOCK
from s2s.base.paths import inside


def _mep_kernel(out: Path) -> str | None:
    """The kernel of the MEP in `out`, "" when its mep.toml does not say, None when `out` is no MEP."""
    toml = out / "mep.toml"
    if not toml.is_file():
        return None
    try:
        raw = tomllib.loads(toml.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    kernel = raw.get("kernel")
    return kernel if isinstance(kernel, str) else ""


def check_place(out: Path, tree: Path, kernel: str, force: bool) -> None:
    """`out` may hold an MEP of `kernel` from `tree`: not a file, not in the tree, not around it, not a foreign
    directory (unless `force`); created (empty) when new, so that its lock can be taken before anything else is written."""
    where = str(out)
    if out.exists() and not out.is_dir():
        raise UserError("-o names an existing file; an MEP is a directory", file=where, hint="choose a new directory")
    if inside(out, tree):
        raise UserError(f"-o lies inside the application tree ({tree.resolve()}); s2s writes nothing there",
                        file=where, hint="choose a directory outside the tree")
    if inside(tree, out):
        raise UserError(f"-o holds the application tree ({tree.resolve()})", file=where, hint="choose a directory outside the tree")
    if not force:
        _refuse_foreign(out, kernel)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"-o: cannot create the directory ({exc.strerror})", file=where) from None


def _refuse_foreign(out: Path, kernel: str) -> None:
    if out.is_dir() and _entries(out) and _mep_kernel(out) != kernel:
        have = _mep_kernel(out)
        what = (f"holds the MEP of another kernel ({have})" if have else "is not empty and is not an MEP of " + kernel)
        raise UserError(f"-o {what}", file=str(out),
                        hint="choose another directory, or pass --force to replace it (its history and variants go too)")


def _entries(out: Path) -> list[Path]:
    """What `out` holds besides its lock file."""
    return [p for p in out.iterdir() if p.name != LOCK]


def prepare_output(out: Path, tree: Path, kernel: str, *, force: bool = False) -> None:
    """Check (and with `force` empty) the MEP directory `out` for `kernel` extracted from `tree`; a UserError when refused.
    The caller holds `out`'s lock: its lock file stays."""
    where = str(out)
    check_place(out, tree, kernel, force)
    if out.is_dir() and _entries(out):
        if _mep_kernel(out) != kernel:
            for child in _entries(out):
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"-o: cannot create the directory ({exc.strerror})", file=where) from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise UserError("-o: the directory is not writable", file=where)
