"""The pre-imported OpenCL harness (s2s/mep/backends/opencl_zygote.py): a forked harness gives what the plain
subprocess gives, each request's environment reaches its child, a crash and a kill are reported as before, nothing
outlives s2s, and the plain subprocess runs when the zygote cannot start."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from mep_util import make_mep
from test_run_opencl import SAXPY, saxpy_manifest

from s2s.mep.backends import opencl_zygote
from s2s.mep.backends.opencl import OpenCLBackend
from s2s.mep.evaluate import build, evaluate, run_built

pytest.importorskip("pyopencl")
pytestmark = pytest.mark.slow

HANG = SAXPY.replace("if (i < n) out[i]", "volatile int spin = 1; while (spin) { } if (i < n) out[i]")


@pytest.fixture
def saxpy(tmp_path: Path) -> Path:
    return make_mep(tmp_path / "mep", SAXPY, saxpy_manifest(), {"hang": HANG})


@pytest.fixture
def fresh_zygote(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """This test's own zygote state: none started, none failed; the one it starts is ended after it."""
    opencl_zygote.stop()
    monkeypatch.setattr(opencl_zygote, "_failed", False)
    monkeypatch.delenv(opencl_zygote.SWITCH, raising=False)
    yield
    opencl_zygote.stop()


def _children_of(pid: int) -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except (OSError, ValueError):
            continue
        if entry.isdigit() and int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.add(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_forked_harness_gives_the_plain_subprocess_verdicts(saxpy: Path, fresh_zygote: None,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    forked = evaluate(saxpy, None, time=False)
    assert opencl_zygote._zygote is not None, "the evaluation did not go through the zygote"
    assert forked.verdict == "ok", forked.messages
    monkeypatch.setenv(opencl_zygote.SWITCH, "0")
    plain = evaluate(saxpy, None, time=False)
    assert plain.verdict == "ok", plain.messages
    assert (forked.device, forked.input_sets, [(o.name, o.ok) for o in forked.outputs]) == (
        plain.device, plain.input_sets, [(o.name, o.ok) for o in plain.outputs])


def test_each_requests_environment_reaches_its_child(saxpy: Path, fresh_zygote: None,
                                                    monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    b = build(saxpy, None)
    assert b.ok and opencl_zygote._zygote is not None
    monkeypatch.setenv("S2S_OPENCL_DEVICE", "no such device here")  # read by the runner in the child
    m = run_built(b, time=False)
    assert m.verdict != "ok" and "no such device here" in "\n".join(m.messages), m.messages
    monkeypatch.delenv("S2S_OPENCL_DEVICE")
    m = OpenCLBackend().run(b, time=False, harness_lock=tmp_path / "lock")  # $S2S_HARNESS_LOCK: the phases
    assert m.verdict == "ok", m.messages
    assert "checks" in m.phase_seconds and "host.setup" in m.phase_seconds, m.phase_seconds


def test_a_killed_or_crashed_harness_is_reported_as_before(saxpy: Path, fresh_zygote: None) -> None:
    b = build(saxpy, "hang")
    assert b.ok, b.messages
    backend = OpenCLBackend()
    for sig in (signal.SIGKILL, signal.SIGTERM):
        child = opencl_zygote.start(backend.run_argv(b, time=False), saxpy, backend.run_env(b))
        assert child is not None
        assert os.getpgid(child.pid) == child.pid  # its own group: the timeout's killpg reaches all of it
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=0.5)
        os.kill(child.pid, sig)
        assert child.wait(timeout=30) == -sig
        child.stdout.close()
        child.stderr.close()


def test_nothing_outlives_a_killed_s2s(saxpy: Path, tmp_path: Path) -> None:
    """s2s killed with -9 while a harness spins: the zygote and the harness end too, though a process s2s forked
    (a scan worker) still lives."""
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys, time
        from pathlib import Path
        from s2s.mep.backends import opencl_zygote
        from s2s.mep.backends.opencl import OpenCLBackend
        from s2s.mep.evaluate import build
        b = build(Path({str(saxpy)!r}), "hang")
        backend = OpenCLBackend()
        child = opencl_zygote.start(backend.run_argv(b, time=False), b.mep_dir, backend.run_env(b))
        worker = os.fork()
        if worker == 0:
            time.sleep(600)
            os._exit(0)
        print(opencl_zygote._zygote.proc.pid, child.pid, worker, flush=True)
        time.sleep(600)
        """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    try:
        assert proc.stdout is not None
        zygote, child, worker = (int(x) for x in proc.stdout.readline().split())
        assert _children_of(proc.pid) == {zygote, worker} and _children_of(zygote) == {child}
        time.sleep(0.5)
        assert _alive(zygote) and _alive(child)
    finally:
        proc.kill()
        proc.wait()
    t0 = time.monotonic()
    while (_alive(zygote) or _alive(child)) and time.monotonic() - t0 < 10:
        time.sleep(0.1)
    left = [pid for pid in (zygote, child) if _alive(pid)]
    for pid in [*left, worker]:  # the test's own cleanup, whatever the outcome
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert left == []


def test_the_plain_subprocess_runs_when_the_zygote_cannot_start(saxpy: Path, fresh_zygote: None,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opencl_zygote, "ENTRY", "import sys; sys.exit(3)")  # dies before it is ready
    m = evaluate(saxpy, None, time=False)
    assert m.verdict == "ok", m.messages
    assert opencl_zygote._zygote is None and opencl_zygote._failed
