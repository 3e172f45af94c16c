"""A run killed at the capture's timeout keeps the kernels it recorded before the kill (one instrumented run for many
kernels, as the fidelity bench's per-application deadline stops it): for real on the CPU (PoCL), with
tests/fixtures/ocl_three (three kernels, each launched once a step), its run command sleeping past the timeout."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from s2s.base.errors import UserError

pytest.importorskip("pyopencl")
pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None, reason="make and gcc needed")


@pytest.mark.slow
def test_kernels_recorded_before_the_kill_are_captured(tmp_path: Path) -> None:
    from s2s.capture import Captured, KernelCapture, capture_kernels
    from s2s.mep.manifest import load

    app = tmp_path / "three"
    shutil.copytree(ROOT / "tests" / "fixtures" / "ocl_three", app)
    jobs = [KernelCapture("scale", launch=2, output=str(tmp_path / "mep-scale")),
            KernelCapture("axpy", launch=99, output=str(tmp_path / "mep-axpy"))]  # never reached: 4 steps
    # ./three runs in 0.12 s here, 1.1 s with a cold PoCL cache: 6 s leave room for a loaded machine
    got = capture_kernels(app, jobs, "make", "./three && sleep 120", timeout=6)
    assert "was killed after 6 s" in got.stopped
    scale, axpy = got.results
    assert isinstance(scale, Captured), scale
    assert load(scale.mep).capture["sets"] == [2]
    assert any("recorded in full before" in n for n in scale.notes), scale.notes
    assert isinstance(axpy, UserError) and "was killed after 6 s" in str(axpy) and "later launch" in str(axpy)


@pytest.mark.slow
def test_total_s_bounds_the_build_and_the_run_together(tmp_path: Path) -> None:
    """`total_s`: the run gets what the build left of it (the fidelity bench's worker limit), not a timeout of its own
    that would outlast the caller's deadline; what it recorded before the kill is kept."""
    import time

    from s2s.capture import Captured, KernelCapture, capture_kernels

    app = tmp_path / "three"
    shutil.copytree(ROOT / "tests" / "fixtures" / "ocl_three", app)
    t0 = time.monotonic()
    got = capture_kernels(app, [KernelCapture("scale", launch=1, output=str(tmp_path / "mep-scale"))],
                          "make && sleep 2", "./three && sleep 120", timeout=100, total_s=9)
    assert time.monotonic() - t0 < 60  # not the run's own 100 s
    assert "was killed after" in got.stopped and isinstance(got.results[0], Captured), got.results
