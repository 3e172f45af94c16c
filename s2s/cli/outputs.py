"""Where a command will write, checked before it does any work: a directory option (`-o`, `--work`) must name a
directory or a place one can be created, a file option (`--diff`) a file in a writable directory. A wrong place is one
line naming it and exit 2 at once, not a traceback after minutes of optimization."""
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from s2s.base.errors import UserError

# command -> (attribute, option as the user writes it, "dir" | "file")
OUTPUTS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "extract": (("output", "-o", "dir"),),
    "capture": (("output", "-o", "dir"),),
    "auto": (("work", "--work", "dir"), ("diff", "--diff", "file")),
    "reintegrate": (("diff", "--diff", "file"),),
}


def check_outputs(args: argparse.Namespace) -> None:
    for attr, flag, kind in OUTPUTS.get(getattr(args, "command", ""), ()):
        value = getattr(args, attr, None)
        if value:
            (check_dir if kind == "dir" else check_file)(Path(value), flag)


def _probe(directory: Path, flag: str, target: Path) -> None:
    """Create and remove a scratch entry in `directory`: the one test of writability that holds for root, read-only
    mounts and /proc alike."""
    try:
        scratch = tempfile.mkdtemp(prefix=".s2s-probe-", dir=directory)
        os.rmdir(scratch)
    except OSError as exc:
        raise UserError(f"{flag}: cannot write in {directory} ({exc.strerror})", file=str(target)) from None


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    return p


def check_dir(path: Path, flag: str) -> None:
    if path.exists() and not path.is_dir():
        raise UserError(f"{flag} names an existing file; it must be a directory", file=str(path),
                        hint="choose a new directory")
    if path.is_dir():
        _probe(path, flag, path)
        return
    anc = _nearest_existing(path)
    if not anc.is_dir():
        raise UserError(f"{flag}: cannot create the directory: {anc} is not a directory", file=str(path))
    _probe(anc, flag, path)


def check_file(path: Path, flag: str) -> None:
    if path.is_dir():
        raise UserError(f"{flag} names a directory; it must be a file", file=str(path), hint="give a file name")
    parent = path.absolute().parent
    if not parent.is_dir():
        what = "does not exist" if not os.path.lexists(parent) else "is not a directory"
        raise UserError(f"{flag}: the directory {parent} {what}", file=str(path))
    _probe(parent, flag, path)
