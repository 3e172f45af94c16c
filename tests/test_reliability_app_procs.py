"""Issue 30, processes: `auto`'s application runs and its --check-cmd (s2s.capture.appcheck, through
s2s.base.procs.run_group) end whole. A hung run or check is killed with every process it started, a process that left
the session (`setsid`) included; a finished one leaves none behind either; a flood of output is held bounded, not
whole (1 GB of output cost 2.93 GB resident)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT
from safety_util import gone

from s2s.base.errors import UserError
from s2s.base.procs import marked, run_group
from s2s.capture.appcheck import compare_apps


def _app(where: Path) -> Path:
    where.mkdir(parents=True)
    (where / "run.sh").write_text("echo result 42\n")
    return where


def _escapers(late: Path, make: bool = False) -> str:
    """Shell text that starts a child in the group and one in a session of its own, each writing its pid to
    `late`.pids and touching a file 2 s later (well after the command's end or its timeout, under load too), and
    goes on once both are running. `make`: spelled for a Makefile's $(shell ...) (`$` doubled)."""
    quiet = " >/dev/null 2>&1" if make else ""  # $(shell ...) reads their output to its end
    text = "".join(f"{setsid}sh -c 'echo $$ >> {late}.pids; sleep 2; touch {late}.{where}'{quiet} & "
                   for setsid, where in (("", "group"), ("setsid ", "session")))
    text += f'while [ "$(cat {late}.pids 2>/dev/null | wc -l)" -lt 2 ]; do sleep 0.01; done; '
    return text.replace("$", "$$") if make else text


def _none_late(late: Path) -> None:
    """Neither child outlived the command: each that wrote its pid is gone when the command has returned, so it never
    touches its file (no 3 s of waiting for the touch); where one did not get as far as its pid, wait past its touch."""
    pids = Path(f"{late}.pids").read_text().split() if Path(f"{late}.pids").exists() else []
    if len(pids) < 2:
        time.sleep(3.0)
    assert all(gone(int(pid)) for pid in pids), f"a child of the command outlived it: {pids}"
    assert not Path(f"{late}.group").exists(), "a child in the command's group outlived it"
    assert not Path(f"{late}.session").exists(), "a child that left the session (setsid) outlived the command"


@pytest.mark.slow
def test_a_process_that_leaves_the_session_dies_with_the_command(tmp_path: Path) -> None:
    late = tmp_path / "late"
    res = run_group(_escapers(late) + "echo started", cwd=tmp_path, timeout_s=10)
    assert res.returncode == 0 and "started" in res.output and res.seconds < 3
    _none_late(late)


@pytest.mark.slow
def test_a_timed_out_command_takes_its_setsid_children_with_it(tmp_path: Path) -> None:
    late = tmp_path / "late"
    res = run_group(_escapers(late) + "sleep 30", cwd=tmp_path, timeout_s=0.5)
    assert res.timed_out and res.seconds < 5
    _none_late(late)


@pytest.mark.slow
@pytest.mark.parametrize("hung", ["run", "check"])
def test_a_hung_application_run_or_check_is_killed_whole(tmp_path: Path, hung: str) -> None:
    before, after = _app(tmp_path / "before"), _app(tmp_path / "after")
    late = tmp_path / "late"
    hang = _escapers(late) + "sleep 60"
    run_cmd = hang if hung == "run" else "sh run.sh"
    check = hang if hung == "check" else None
    t0 = time.monotonic()
    with pytest.raises(UserError) as err:
        compare_apps(before, after, "true", run_cmd, runs=1, check_cmd=check, timeout=0.5, warmup=False, log=lambda _m: None)
    assert "was killed after 0.5 s" in err.value.message and "with every process it started" in err.value.message
    assert time.monotonic() - t0 < 10
    _none_late(late)


@pytest.mark.slow
def test_a_flood_of_application_output_is_held_bounded(tmp_path: Path) -> None:
    """300 MB of output from each run: the runs' output is kept to its first and last MB, and the process that
    compares never holds a run's output whole: its peak resident size grows by less than one run's output over the
    same comparison of runs that print one line (measured against that, not against a fixed size: a CI machine's
    baseline differed from this one's by 200 MB)."""
    before, after = _app(tmp_path / "before"), _app(tmp_path / "after")
    flood = f"{sys.executable} -c \"import sys; [sys.stdout.write('x' * 999 + chr(10)) for _ in range(300000)]\"; echo result 42"

    def compare(run_cmd: str) -> tuple[str, int, int]:
        code = f"""
import resource
from pathlib import Path
from s2s.capture.appcheck import compare_apps
cmp = compare_apps(Path({str(before)!r}), Path({str(after)!r}), "true", {run_cmd!r}, runs=1, warmup=False, log=lambda m: None)
print(cmp.unchanged, max(len(r.stdout) for r in cmp.before + cmp.after), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert res.returncode == 0, res.stderr
        unchanged, longest, peak_kib = res.stdout.split()
        return unchanged, int(longest), int(peak_kib)

    unchanged, longest, peak_kib = compare(flood)
    _same, _short, base_kib = compare("echo result 42")
    assert unchanged == "True"  # the tail (its last line) is kept and compared
    assert longest < 3 << 20
    assert peak_kib - base_kib < 250 << 10, f"peak {peak_kib} KiB for 300 MB of output per run, {base_kib} KiB without"


def test_the_marker_finds_only_the_commands_own_processes(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sleep", "30"], env={**os.environ, "S2S_RUN_ID": "test-marker-1"})
    other = subprocess.Popen(["sleep", "30"], env={**os.environ, "S2S_RUN_ID": "test-marker-10"})
    try:
        assert marked("test-marker-1") == [proc.pid]
    finally:
        proc.kill()
        other.kill()
        proc.wait()
        other.wait()
    assert marked("test-marker-1") == []


@pytest.mark.slow
def test_the_dry_run_of_the_build_is_killed_whole(tmp_path: Path) -> None:
    """`make -n` still runs a Makefile's `$(shell ...)`: a dry run that hangs there is killed with what it started."""
    from s2s.scan.build_capture import commands_from_build

    tree = tmp_path / "app"
    tree.mkdir()
    late = tmp_path / "late"
    (tree / "a.c").write_text("int main(void) { return 0; }\n")
    (tree / "Makefile").write_text(f"X := $(shell {_escapers(late, make=True)}sleep 30)\n"
                                   "all:\n\tgcc -O2 -c a.c\n")
    t0 = time.monotonic()
    found, how = commands_from_build(tree, "make", timeout_s=0.5)
    assert found == {} and "did not finish in" in how and time.monotonic() - t0 < 10
    _none_late(late)
    (tree / "Makefile").write_text("all:\n\tgcc -O2 -DN=3 -c a.c\n")  # the ordinary case still reads the flags
    found, how = commands_from_build(tree, "make")
    assert [c.args[-3:] for c in found.values()] == [("-DN=3", "-c", "a.c")], how


def test_one_empty_scan_does_not_end_the_kill(tmp_path: Path) -> None:
    """A process in the middle of an execve reads an empty /proc/PID/environ: a scan that finds no marked process is
    confirmed by a second one before the kill stops (a writer escaped `--restore` once that way)."""
    from s2s.base.procs import kill_until_none

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    scans = iter([[], [child.pid]])  # the first scan misses it, as one mid-execve would

    def members() -> list[int]:
        found = next(scans, None)
        if found is not None:
            return found
        return [child.pid] if child.poll() is None else []

    assert kill_until_none(members, timeout_s=10)
    assert child.wait(timeout=10) == -9
