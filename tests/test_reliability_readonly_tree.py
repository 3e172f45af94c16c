"""Issue 30: capture and auto on a read-only tree. Its copy kept the tree's modes, so the instrumented sources and the build's
outputs could not be written there (a traceback for a user who is not root). The copy is owner-writable now and the
tree itself stays as it was, modes included."""
from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from safety_util import cli_inproc, fingerprint

pytest.importorskip("pyopencl")


def _read_only(root: Path) -> None:
    for dirpath, _dirs, files in os.walk(root, topdown=False):
        for name in files:
            os.chmod(os.path.join(dirpath, name), 0o444)
        os.chmod(dirpath, 0o555)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="make and a C compiler are needed")
def test_capture_of_a_read_only_tree_works_in_a_writable_copy(solver: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    tree = tmp_path / "ro"
    shutil.copytree(solver, tree)
    _read_only(tree)
    before = fingerprint(tree)
    kept = tmp_path / "kept"
    try:
        rc, _o, err = cli_inproc(["capture", str(tree), "--kernel", "matvec", "--build-cmd", "make", "--run-cmd",
                                  "./ocl_solver -k kernels", "-o", str(tmp_path / "mep"), "--keep-copy", str(kept)], capsys)
        assert rc == 0, err
        assert fingerprint(tree) == before
        modes = [os.lstat(os.path.join(d, n)).st_mode for d, ds, fs in os.walk(kept) for n in ds + fs]
        assert modes and all(stat.S_ISLNK(m) or m & stat.S_IWUSR for m in modes)
    finally:
        for dirpath, _dirs, _files in os.walk(tree):
            os.chmod(dirpath, 0o755)  # let pytest remove it


@pytest.mark.slow
def test_auto_on_a_read_only_tree_works_in_writable_copies(solver: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """auto's work copy kept the tree's modes: for a user who is not root, the winner could not be written into it."""
    tree = tmp_path / "ro"
    shutil.copytree(solver, tree)
    _read_only(tree)
    before = fingerprint(tree)
    work = tmp_path / "w"
    try:
        rc, _o, err = cli_inproc(["auto", str(tree), "--kernels", "matvec", "--work", str(work), "--max-evals", "1",
                                  "--rounds", "1", "--no-patterns", "--diff", str(tmp_path / "a.diff")], capsys)
        assert rc in (0, 1) and "Traceback" not in err, err
        assert fingerprint(tree) == before
        modes = [os.lstat(os.path.join(d, n)).st_mode for d, ds, fs in os.walk(work / "tree") for n in ds + fs]
        assert modes and all(stat.S_ISLNK(m) or m & stat.S_IWUSR for m in modes)
    finally:
        for dirpath, _dirs, _files in os.walk(tree):
            os.chmod(dirpath, 0o755)
