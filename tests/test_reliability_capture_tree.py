"""Issue 30: capture and auto's instrumented copies on trees with files that cannot be read (a link to a file whose
read fails with EIO: capture stopped, naming its -o as the culprit) and with a source that is a symlink leaving the
tree (the instrumentation was written through the link, into the user's file outside the tree)."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from safety_util import cli_inproc, fingerprint


def _hostile(solver: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The sample with unreadable files beside its sources and its host file (the one that launches) outside it."""
    tree = tmp_path / "app"
    shutil.copytree(solver, tree, symlinks=True)
    for rel in ("bad.cu", "kernels/bad.cl", "include/bad.h"):
        os.symlink("/proc/self/mem", tree / rel)  # a regular file whose read at offset 0 fails (EIO)
    outside = tmp_path / "shared" / "main.c"
    outside.parent.mkdir()
    shutil.move(tree / "src" / "main.c", outside)
    os.symlink(outside, tree / "src" / "main.c")
    return tree, outside


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_profile_instrumentation_never_writes_through_a_link(solver: Path, tmp_path: Path) -> None:
    from s2s.capture.profile import instrument_all
    from s2s.scan.tree import scan_tree

    tree, outside = _hostile(solver, tmp_path)
    before, was = fingerprint(tree), _sha(outside)
    root, sites, _notes, backend = instrument_all(tree, tmp_path / "work", list(scan_tree(tree, jobs=1).launches))
    assert backend == "opencl" and any(s.startswith("src/main.c:") for s in sites), sites
    copied = root / "src" / "main.c"
    assert not copied.is_symlink() and b"clEnqueueNDRangeKernel" in copied.read_bytes()
    assert copied.read_bytes() != outside.read_bytes()  # the instrumented text went into the copy
    assert _sha(outside) == was and fingerprint(tree) == before


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="make and a C compiler are needed")
def test_capture_of_a_tree_with_unreadable_files_and_a_linked_source(solver: Path, tmp_path: Path,
                                                                     capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pyopencl")
    tree, outside = _hostile(solver, tmp_path)
    before, was = fingerprint(tree), _sha(outside)
    rc, _o, err = cli_inproc(["capture", str(tree), "--kernel", "matvec", "--build-cmd", "make", "--run-cmd",
                              "./ocl_solver -k kernels", "-o", str(tmp_path / "mep")], capsys)
    assert rc == 0 and "Traceback" not in err, err
    assert (tmp_path / "mep" / "capture" / "index.json").is_file()
    assert _sha(outside) == was, "the instrumentation was written through the link into a file outside the tree"
    assert fingerprint(tree) == before


@pytest.mark.parametrize("cmd", [["capture", "--kernel", "k", "--build-cmd", "true", "--run-cmd", "true", "-o", "{out}"],
                                 ["auto", "--build-cmd", "true", "--run-cmd", "true", "--work", "{out}"]])
def test_capture_and_auto_on_a_file_instead_of_a_directory_is_one_line(tmp_path: Path, cmd: list[str],
                                                                       capsys) -> None:  # type: ignore[no-untyped-def]
    from safety_util import one_line_exit_2

    one = tmp_path / "k.cu"
    one.write_text("__global__ void k(float* a) { a[0] = 1.0f; }\n")
    out = tmp_path / "out"
    rc, _o, err = cli_inproc([cmd[0], str(one), *[a.replace("{out}", str(out)) for a in cmd[1:]]], capsys)
    one_line_exit_2(rc, err)
    assert "needs the application's directory" in err and str(one) in err, err
    assert not out.exists()


def test_write_in_copy_replaces_a_link_and_refuses_a_linked_directory(tmp_path: Path) -> None:
    from s2s.base.errors import UserError
    from s2s.base.treefiles import write_in_copy

    copy, outside = tmp_path / "copy", tmp_path / "outside"
    copy.mkdir()
    outside.mkdir()
    (outside / "f.c").write_text("theirs")
    os.symlink(outside / "f.c", copy / "f.c")
    os.symlink(outside, copy / "sub")
    write_in_copy(copy, "f.c", b"ours")
    assert (outside / "f.c").read_text() == "theirs"
    assert not (copy / "f.c").is_symlink() and (copy / "f.c").read_text() == "ours"
    with pytest.raises(UserError, match="link leaving the work copy"):
        write_in_copy(copy, "sub/g.c", b"ours")
    assert sorted(os.listdir(outside)) == ["f.c"]
