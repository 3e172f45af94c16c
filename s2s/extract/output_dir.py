"""Where `extract -o` may write: outside the application tree, into a new or empty directory or an MEP of the same
kernel; anything else is refused unless `--force` (which empties it first: an old MEP's history and variants go)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import tomllib

from s2s.base.errors import UserError
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


def prepare_output(out: Path, tree: Path, kernel: str, *, force: bool = False) -> None:
    """Check (and with `force` empty) the MEP directory `out` for `kernel` extracted from `tree`; a UserError when refused."""
    where = str(out)
    if out.exists() and not out.is_dir():
        raise UserError("-o names an existing file; an MEP is a directory", file=where, hint="choose a new directory")
    if inside(out, tree):
        raise UserError(f"-o lies inside the application tree ({tree.resolve()}); s2s writes nothing there",
                        file=where, hint="choose a directory outside the tree")
    if inside(tree, out):
        raise UserError(f"-o holds the application tree ({tree.resolve()})", file=where, hint="choose a directory outside the tree")
    if out.is_dir() and any(out.iterdir()):
        have = _mep_kernel(out)
        if have != kernel:
            what = (f"holds the MEP of another kernel ({have})" if have else "is not empty and is not an MEP of " + kernel)
            if not force:
                raise UserError(f"-o {what}", file=where,
                                hint="choose another directory, or pass --force to replace it (its history and variants go too)")
            for child in out.iterdir():
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
