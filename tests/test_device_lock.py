"""The device lock: checks shared, timings exclusive, a waiting timing ahead of later checks; the harness's wait for
it is not counted against its time limit; an OpenCL harness (PoCL) takes it itself; the time this process is blocked
by another process's hold is not counted against the optimizer's time budget."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from s2s.base.devicelock import WAIT_PHASE, blocked_s, device_lock, lock_path
from s2s.mep.backends.base import run_harness_process


@pytest.fixture(autouse=True)
def _lock_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "device.lock"
    monkeypatch.setenv("S2S_DEVICE_LOCK", str(path))
    return path


def _hold(events: list[str], name: str, shared: bool, seconds: float, started: threading.Event | None = None) -> None:
    with device_lock(shared=shared):
        events.append(f"{name}+")
        if started is not None:
            started.set()
        time.sleep(seconds)
        events.append(f"{name}-")


def test_checks_share_the_device() -> None:
    events: list[str] = []
    threads = [threading.Thread(target=_hold, args=(events, n, True, 0.4)) for n in ("a", "b")]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.monotonic() - t0 < 0.75  # side by side, not one after the other
    assert events[:2] == ["a+", "b+"] or events[:2] == ["b+", "a+"]


def test_a_timing_waits_for_checks_and_goes_before_later_ones() -> None:
    events: list[str] = []
    first = threading.Event()
    check1 = threading.Thread(target=_hold, args=(events, "check1", True, 0.6, first))
    check1.start()
    first.wait()
    timing = threading.Thread(target=_hold, args=(events, "timing", False, 0.3))
    timing.start()
    time.sleep(0.15)  # the timing now waits for check1 and holds the turnstile
    check2 = threading.Thread(target=_hold, args=(events, "check2", True, 0.1))
    check2.start()
    for t in (check1, timing, check2):
        t.join()
    assert events == ["check1+", "check1-", "timing+", "timing-", "check2+", "check2-"]


def _fake_harness(tmp_path: Path, wait_s: float, work_s: float) -> list[str]:
    script = tmp_path / "fake_harness.py"
    script.write_text(
        "import sys, time\n"
        f"print('S2S_PHASE {WAIT_PHASE} (timing)', file=sys.stderr, flush=True)\n"
        f"time.sleep({wait_s})\n"
        "print('S2S_PHASE device held (timing)', file=sys.stderr, flush=True)\n"
        f"time.sleep({work_s})\n"
        "print('S2S_RESULT {\"schema\": 1, \"verdict\": \"ok\", \"messages\": []}', flush=True)\n")
    return [sys.executable, str(script)]


def _run(argv: list[str], tmp_path: Path, timeout_s: float):  # type: ignore[no-untyped-def]
    return run_harness_process(argv, env={}, cwd=tmp_path, timeout_s=timeout_s, backend="cuda", kernel="k", variant=None,
                               build_seconds=0.0)


def test_the_wait_for_the_device_is_not_counted_against_the_time_limit(tmp_path: Path) -> None:
    m = _run(_fake_harness(tmp_path, wait_s=2.0, work_s=0.2), tmp_path, timeout_s=1.0)
    assert m.verdict == "ok", m.messages
    # where the time went, from the phase lines: about 2 s waiting, about 0.2 s timing
    assert 1.9 <= m.phase_seconds["wait"] < 3.0 and 0.15 <= m.phase_seconds["timing"] < 1.0, m.phase_seconds
    assert m.to_json()["phase_seconds"] == m.phase_seconds


def test_the_harness_own_work_is_still_limited(tmp_path: Path) -> None:
    m = _run(_fake_harness(tmp_path, wait_s=0.1, work_s=5.0), tmp_path, timeout_s=1.0)
    assert m.verdict == "timed-out"
    assert "killed after 1 s" in m.messages[0] and "device held (timing)" in m.messages[0]


HOLDER = ("import fcntl, sys, time\n"
          "f = open(sys.argv[1], 'a+')\n"
          "fcntl.flock(f.fileno(), fcntl.LOCK_EX)\n"
          "print('held', flush=True)\n"
          "time.sleep(float(sys.argv[2]))\n")


def _other_process_holds(seconds: float) -> subprocess.Popen[str]:
    """Another process holding the device (the lock file, exclusive) for `seconds`, once it has printed 'held'."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock_path()), str(seconds)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_time_blocked_by_another_process_is_counted_apart_and_our_own_holds_are_not() -> None:
    from s2s.optimize.progress import Clock

    clock = Clock(start=time.monotonic(), budget_s=1.0)
    b0 = blocked_s()
    other = _other_process_holds(1.2)
    try:
        with device_lock():  # waits about 1.2 s for the other process
            pass
    finally:
        other.wait()
    blocked = blocked_s() - b0
    assert 0.9 <= blocked < 3.0, blocked
    # the budget of 1 s is not spent: the wait was not the tool's own time
    assert clock.spent(time.monotonic()) < 0.8 and clock.over(time.monotonic()) is None
    # a wait behind this process's own hold is the tool's own time
    b1 = blocked_s()
    started = threading.Event()
    holder = threading.Thread(target=_hold, args=([], "own", False, 1.0, started))
    holder.start()
    started.wait()
    with device_lock():
        pass
    holder.join()
    assert blocked_s() - b1 < 0.2
    assert "time budget spent" in (clock.over(time.monotonic()) or "")


def test_a_harness_waiting_for_another_process_is_blocked_time(tmp_path: Path) -> None:
    b0 = blocked_s()
    m = _run(_fake_harness(tmp_path, wait_s=1.5, work_s=0.2), tmp_path, timeout_s=5.0)
    assert m.verdict == "ok", m.messages
    assert 1.3 <= blocked_s() - b0 < 2.5  # its wait phase, not its timing
    b1 = blocked_s()
    time.sleep(0.3)
    assert blocked_s() == b1  # the harness ended: nothing of ours waits any more


@pytest.mark.slow
def test_an_opencl_harness_times_only_when_the_device_is_free(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    from mep_util import make_mep
    from test_run_opencl import SAXPY, saxpy_manifest

    from s2s.base.devicelock import lock_path
    from s2s.mep.evaluate import build, run_built

    mep = make_mep(tmp_path / "mep", SAXPY, saxpy_manifest(timeout_s=3.0))
    b = build(mep, None)
    assert b.ok, b.log
    started = threading.Event()
    events: list[str] = []
    holder = threading.Thread(target=_hold, args=(events, "other timing", False, 5.0, started))
    holder.start()
    started.wait()
    t0 = time.monotonic()
    m = run_built(b, harness_lock=lock_path())  # its wait (about 5 s) exceeds its 3 s limit, which does not count it
    elapsed = time.monotonic() - t0
    holder.join()
    assert m.verdict == "ok", m.messages
    assert elapsed >= 4.5  # it could not check or time while the other held the device
    assert m.ref is not None and m.ref.samples == 5
    assert m.phase_seconds["wait"] >= 3.0 and m.phase_seconds["checks"] > 0 and m.phase_seconds["timing"] > 0, m.phase_seconds


@pytest.mark.slow
def test_an_opencl_harness_checks_beside_other_checks_and_times_alone(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    from mep_util import make_mep
    from test_run_opencl import SAXPY, saxpy_manifest

    from s2s.base.devicelock import lock_path
    from s2s.mep.evaluate import build, run_built

    mep = make_mep(tmp_path / "mep", SAXPY, saxpy_manifest(timeout_s=3.0))
    b = build(mep, None)
    assert b.ok, b.log
    started = threading.Event()
    events: list[str] = []
    holder = threading.Thread(target=_hold, args=(events, "other checks", True, 4.0, started))
    holder.start()
    started.wait()
    t0 = time.monotonic()
    m = run_built(b, harness_lock=lock_path())  # its checks share the device; its timing waits for the other's checks
    elapsed = time.monotonic() - t0
    holder.join()
    assert m.verdict == "ok", m.messages
    assert elapsed >= 3.5 and m.phase_seconds["wait"] >= 2.0, (elapsed, m.phase_seconds)
    assert m.phase_seconds["checks"] > 0 and m.ref is not None and m.ref.samples == 5
