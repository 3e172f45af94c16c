"""Issue 30: a full disk during extract ended in a traceback. The disk fills at the first, third or fifth file
written (os.fsync, through which every atomic write goes, raises ENOSPC): one line naming the MEP, exit 2, the tree
unchanged and no half-written MEP left where there was none."""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from safety_util import cli_inproc, copy_sample, fingerprint, one_line_exit_2


@pytest.mark.parametrize("after", [0, 2, 4])
def test_a_full_disk_during_extract_is_one_line(tmp_path: Path, after: int, monkeypatch: pytest.MonkeyPatch,
                                                capsys) -> None:  # type: ignore[no-untyped-def]
    tree = copy_sample(tmp_path / "app")
    before = fingerprint(tree)
    real, calls = os.fsync, [0]

    def fsync(fd: int) -> None:
        calls[0] += 1
        if calls[0] > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    out = tmp_path / "mep"
    rc, _o, err = cli_inproc(["extract", str(tree), "--kernel", "matmul", "-o", str(out)], capsys)
    one_line_exit_2(rc, err)
    assert "No space left on device" in err and str(out) in err, err
    assert calls[0] > after  # the disk did fill during the extraction
    assert not out.exists() and fingerprint(tree) == before


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from safety_util import matmul_mep

    return matmul_mep(tmp_path_factory.mktemp("enospc"))


@pytest.mark.parametrize(("after", "said"), [(0, "cannot write the backup"), (1, "cannot write the backup"),
                                             (2, "the original files were restored")])
def test_a_full_disk_during_in_place_is_one_line_and_the_tree_unchanged(golden: tuple[Path, Path], tmp_path: Path, after: int,
                                                                       said: str, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys) -> None:  # type: ignore[no-untyped-def]
    from safety_util import fake_win, private_copy

    tree, mep = private_copy(golden, tmp_path)
    fake_win(mep)
    before = fingerprint(tree)
    real, calls = os.fsync, [0]

    def fsync(fd: int) -> None:
        calls[0] += 1
        if calls[0] > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--in-place"], capsys)
    assert rc == 2 and "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error:") and said in last and "No space left on device" in last, err
    assert fingerprint(tree) == before
    assert not list((mep / ".s2s-backup").glob("*/journal.json"))


@pytest.mark.slow
@pytest.mark.parametrize("after", [0, 3, 7])
def test_a_full_disk_during_capture_is_one_line(solver: Path, tmp_path: Path, after: int, monkeypatch: pytest.MonkeyPatch,
                                                capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pyopencl")
    before = fingerprint(solver)
    real, calls = os.fsync, [0]

    def fsync(fd: int) -> None:
        calls[0] += 1
        if calls[0] > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    out = tmp_path / "mep"
    rc, _o, err = cli_inproc(["capture", str(solver), "--kernel", "matvec", "--build-cmd", "make", "--run-cmd",
                              "./ocl_solver -k kernels", "-o", str(out)], capsys)
    assert rc == 2, (rc, _o, err, calls)
    one_line_exit_2(rc, err)
    assert "No space left on device" in err, err
    assert calls[0] > after and not out.exists() and fingerprint(solver) == before


@pytest.mark.slow
@pytest.mark.parametrize(("call", "after"), [("pwrite", 0), ("pwrite", 4), ("fsync", 0), ("fsync", 10)])
def test_a_full_disk_during_auto_is_one_line_naming_the_file(tmp_path: Path, call: str, after: int,
                                                             monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """The disk fills while auto copies the tree (os.pwrite: the copy went on without the file, and reintegration
    said the kernel was 'no longer in this file', exit 0), or at its first or a later atomic write (the diff, the
    MEP's files after optimizing: one line that named no file)."""
    tree = copy_sample(tmp_path / "app")
    before = fingerprint(tree)
    real, calls = getattr(os, call), [0]

    def full(*args: object) -> object:
        calls[0] += 1
        if calls[0] > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(*args)

    monkeypatch.setattr(os, call, full)
    work = tmp_path / "w"
    rc, _o, err = cli_inproc(["auto", str(tree), "--kernels", "matvec", "--work", str(work), "--max-evals", "1",
                              "--rounds", "1", "--no-patterns", "--diff", str(tmp_path / "a.diff")], capsys)
    one_line_exit_2(rc, err)
    assert calls[0] > after
    named = err.split(": No space left on device")[0].removeprefix("error: ")
    assert "No space left on device" in err and Path(named).is_relative_to(tmp_path), err
    assert Path(named) != tmp_path and not Path(named).is_relative_to(tree), err
    assert fingerprint(tree) == before
