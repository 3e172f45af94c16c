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
    "capture": (("output", "-o", "dir"), ("keep_copy", "--keep-copy", "dir")),
    "sequence": (("output", "-o", "dir"), ("diff", "--diff", "file")),
    "auto": (("work", "--work", "dir"), ("diff", "--diff", "file")),
    "reintegrate": (("diff", "--diff", "file"),),
}


# the directories a command fills with copies and MEPs: never inside the application tree it reads (nor holding it)
OUTSIDE_TREE = {"extract": ("-o",), "capture": ("-o", "--keep-copy"), "sequence": ("-o",)}  # auto checks its --work itself


def check_outputs(args: argparse.Namespace) -> None:
    command = getattr(args, "command", "")
    for attr, flag, kind in OUTPUTS.get(command, ()):
        value = getattr(args, attr, None)
        if not value:
            continue
        if flag in OUTSIDE_TREE.get(command, ()) and getattr(args, "tree", None):
            check_outside_tree(Path(value), Path(args.tree), flag)
        (check_dir if kind == "dir" else check_file)(Path(value), flag)
    if getattr(args, "command", "") == "capture" and args.output:
        check_capture_dir(Path(args.output), args.kernel)


def check_capture_dir(out: Path, kernel: str) -> None:
    """`capture -o DIR` copies the MEP into DIR after the build and the run: DIR must be new, empty, or an MEP of the
    same kernel (as for `extract -o`), checked before either runs."""
    from s2s.base.meplock import LOCK
    from s2s.extract.output_dir import _mep_kernel

    if not out.is_dir() or not any(p.name != LOCK for p in out.iterdir()):
        return
    have = _mep_kernel(out)
    want = kernel.rsplit(":", 1)[-1].split("@", 1)[0]
    if have is None or have.rsplit("::", 1)[-1] != want.rsplit("::", 1)[-1]:
        what = f"holds the MEP of another kernel ({have})" if have else f"is not empty and is not an MEP of {want}"
        raise UserError(f"-o {what}", file=str(out),
                        hint="choose a new directory, or attach the data to an existing MEP of this kernel with --into")


def check_outside_tree(out: Path, tree: Path, flag: str) -> None:
    """`out` (symlinks followed) neither lies in `tree` nor holds it: a copy of the tree made into the tree itself
    copies itself again, level after level."""
    from s2s.base.paths import inside

    if not tree.is_dir():
        return  # the command says what is wrong with the tree
    if inside(out, tree):
        raise UserError(f"{flag} lies inside the application tree ({tree.resolve()}); s2s writes nothing there",
                        file=str(out), hint="choose a directory outside the tree")
    if inside(tree, out):
        raise UserError(f"{flag} holds the application tree ({tree.resolve()})", file=str(out),
                        hint="choose a directory outside the tree")


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
