"""Issue 12, faults: process groups, signals and kill -9 during an in-place change, the per-MEP lock, pending rows
re-queued on resume, bounded application output. The tree is hashed before and after each interrupted operation."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT
from safety_util import cli_inproc, fake_win, fingerprint, matmul_mep, one_line_exit_2, private_copy

from s2s.base.errors import UserError
from s2s.base.meplock import mep_lock
from s2s.base.procs import BoundedOutput, run_group


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return matmul_mep(tmp_path_factory.mktemp("faults"))


@pytest.fixture
def env(golden: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    return private_copy(golden, tmp_path)


# -- process groups and bounded output ------------------------------------------------------------------------
@pytest.mark.slow
def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    late = tmp_path / "late"
    res = run_group(f"(sleep 1; touch {late}) & sleep 30", cwd=tmp_path, timeout_s=0.3)
    assert res.timed_out and res.returncode == 124 and res.seconds < 5
    time.sleep(1.5)
    assert not late.exists()


@pytest.mark.slow
def test_leftover_children_die_with_the_command(tmp_path: Path) -> None:
    late = tmp_path / "late"
    res = run_group(f"(sleep 1; touch {late}) & echo started", cwd=tmp_path, timeout_s=10)
    assert res.returncode == 0 and "started" in res.output
    time.sleep(1.5)
    assert not late.exists()


def test_bounded_output_keeps_the_first_and_last_bytes() -> None:
    out = BoundedOutput(keep=1000)
    for i in range(5000):
        out.feed(f"line {i:05d}\n".encode())
    data = out.bytes()
    assert data.startswith(b"line 00000\n") and data.endswith(b"line 04999\n")
    assert len(data) < 2100 and b"bytes of output left out" in data
    assert out.total == 5000 * 11


def test_a_flood_of_output_is_bounded_in_memory_and_in_the_log(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    script = "import sys\nfor i in range(200000): sys.stdout.write(f'{i:09d} ' * 10 + '\\n')\n"  # ~20 MB
    res = run_group([sys.executable, "-c", script], cwd=tmp_path, timeout_s=120, keep=64 << 10, log=log)
    assert res.returncode == 0 and res.total_bytes > 19_000_000
    assert len(res.output) < 200_000 and log.stat().st_size < 200_000
    text = log.read_text()
    assert text.startswith("000000000 ") and "000199999" in text.splitlines()[-1]


# -- in-place reintegration: timeout, SIGTERM, kill -9 ---------------------------------------------------------
@pytest.mark.slow
def test_a_build_that_outlives_its_timeout_cannot_write_into_the_tree_after_rollback(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    fake_win(mep)
    before = fingerprint(tree)
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--in-place", "--build-cmd", "(sleep 1; echo late > late.txt) & sleep 30",
                              "--cmd-timeout", "0.5"], capsys)
    assert rc == 2 and err.strip().splitlines()[-1].startswith("error:"), err  # after the plan's notes
    assert "timed out" in err and "restored" in err
    time.sleep(1.5)
    assert fingerprint(tree) == before


def _reintegrate_child(mep: Path, started: Path, sleep: float) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "s2s", "reintegrate", str(mep), "--in-place", "--build-cmd", "true",
                             "--test-cmd", f"touch {started}; sleep {sleep}"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, timeout: float = 60) -> None:
    t0 = time.monotonic()
    while not path.exists():
        assert time.monotonic() - t0 < timeout, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_in_place_rolls_back_and_says_so(env: tuple[Path, Path], tmp_path: Path, sig: signal.Signals) -> None:
    tree, mep = env
    fake_win(mep)
    before = fingerprint(tree)
    started = tmp_path / "started"
    proc = _reintegrate_child(mep, started, 30)
    _wait_for(started)
    assert fingerprint(tree) != before  # the winner is in place while the test command runs
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert "restored" in err and signal.Signals(sig).name in err and "Traceback" not in err
    assert fingerprint(tree) == before
    assert not list((mep / ".s2s-backup").glob("*/journal.json"))


@pytest.mark.slow
def test_kill_9_during_in_place_is_detected_by_the_next_command_and_restored(env: tuple[Path, Path], tmp_path: Path,
                                                                            capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    fake_win(mep)
    before = fingerprint(tree)
    started = tmp_path / "started"
    proc = _reintegrate_child(mep, started, 3)
    _wait_for(started)
    proc.kill()
    proc.communicate(timeout=30)
    assert fingerprint(tree) != before
    for cmd in (["run", str(mep), "--no-time"], ["reintegrate", str(mep)], ["report", str(mep)]):
        rc, _o, err = cli_inproc(cmd, capsys)
        one_line_exit_2(rc, err)
        assert "interrupted" in err and f"s2s reintegrate {mep} --restore" in err and "journal.json" in err
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--restore"], capsys)
    assert rc == 0 and "restored" in err, err
    assert fingerprint(tree) == before
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--diff", str(tmp_path / "w.diff")], capsys)
    assert rc == 0, err


# -- one optimize per MEP ---------------------------------------------------------------------------------------
def test_a_second_optimize_on_the_same_mep_exits_2(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    _tree, mep = env
    with mep_lock(mep):
        rc, _o, err = cli_inproc(["optimize", str(mep), "--max-evals", "1", "--rounds", "1", "--no-patterns"], capsys)
    one_line_exit_2(rc, err)
    assert "another s2s optimize is running on this MEP" in err and f"pid {os.getpid()}" in err and "--wait" in err
    assert not (mep / "variants").exists()


def test_the_lock_waits_when_asked(env: tuple[Path, Path]) -> None:
    _tree, mep = env
    order: list[str] = []
    with mep_lock(mep):
        def second() -> None:
            with mep_lock(mep, wait=True):
                order.append("second")

        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.3)
        order.append("first done")
    t.join(timeout=10)
    assert order == ["first done", "second"]
    with pytest.raises(UserError):  # and without --wait, while held:
        with mep_lock(mep), mep_lock(mep):
            pass


# -- pending rows on resume -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_pending_rows_of_a_killed_run_are_requeued_once(env: tuple[Path, Path]) -> None:
    from s2s.mep.history import History
    from s2s.optimize.candidate import Candidate
    from s2s.optimize.loop import Options, optimize, write_variant

    _tree, mep = env
    toml = mep / "mep.toml"
    toml.write_text(toml.read_text().replace("repetitions = 30", "repetitions = 3"))
    src = (mep / "kernel.cl").read_bytes()
    cands = [Candidate(src.replace(b"{", b"{ /* pending %d */" % i, 1), f"pass:test-{i}") for i in range(2)]
    hist = History(mep / "history.sqlite")
    for c in cands:  # what a run killed during its builds leaves: variants written, rows pending
        write_variant(mep, "kernel.cl", c)
        hist.add(c.id, 1, c.origin, None, c.source_sha, None)
    hist.close()
    out = optimize(mep, Options(max_evals=2, rounds=1, use_patterns=False, jobs=2))
    assert out.evaluations == 2
    rows = {r.id: r for r in out.rows}
    for c in cands:
        assert rows[c.id].status == "ok", rows[c.id]
    assert sum(r.status == "pending" for r in out.rows) == 0
    assert len(out.rows) == len(rows)


@pytest.mark.slow
def test_sigterm_to_s2s_run_kills_the_harness_it_started(env: tuple[Path, Path], tmp_path: Path) -> None:
    _tree, mep = env
    src = (mep / "kernel.cl").read_text()
    at = src.index("{", src.index("__kernel"))
    vdir = mep / "variants" / "vhang"
    vdir.mkdir(parents=True)
    (vdir / "kernel.cl").write_text(src[:at + 1] + " { volatile int spin = 1; while (spin) { } } " + src[at + 1:])
    proc = subprocess.Popen([sys.executable, "-m", "s2s", "run", str(mep), "--variant", "vhang", "--no-time"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while len(_processes_on(mep)) < 2:  # s2s and its harness
        assert time.monotonic() - t0 < 120 and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "SIGTERM" in err, err
    time.sleep(0.5)
    assert _processes_on(mep) == []


def _processes_on(mep: Path) -> list[str]:
    """The processes that name the MEP on their command line or run in it (a harness forked by the pre-imported
    OpenCL runner, s2s/mep/backends/opencl_zygote.py, has the zygote's command line and the MEP as its cwd)."""
    res = subprocess.run(["pgrep", "-f", str(mep)], capture_output=True, text=True)
    found = {p for p in res.stdout.split() if int(p) != os.getpid()}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd") == str(mep) and int(pid) != os.getpid():
                found.add(pid)
        except OSError:
            continue
    return sorted(found)
