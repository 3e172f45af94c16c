"""bench/long_kernel_report.py (bench/gpu_long_kernel.sh's summary) on the auto-report.json of a real capture-first
`s2s auto` run on the OpenCL sample on PoCL: auto's wall time against the 10-minute limit, the tool's wall time per
stage, every application build and run by purpose, each profiled kernel's time per launch and outcome, and the
application's own check after the diff is applied; and the verdicts when auto was killed or wrote no report."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli

needs_cc = pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None, reason="make and gcc needed")


@pytest.fixture(scope="module")
def mod() -> Any:
    spec = importlib.util.spec_from_file_location("long_kernel_report", ROOT / "bench" / "long_kernel_report.py")
    assert spec is not None and spec.loader is not None
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_finished_is_yes_no_or_not_decided(mod: Any) -> None:
    assert mod.finished(0, 412.0, 500, 600) == "yes" and mod.finished(1, 120.0, 500, 600) == "yes"
    assert mod.finished(0, 640.0, 900, 600) == "no"  # exited by itself, but past the limit
    assert mod.finished(124, 500.0, 500, 600) == "not decided"  # killed at a deadline shorter than the limit
    assert mod.finished(137, 600.0, 600, 600) == "no" and mod.finished(None, 500.0, 500, 600) == "not decided"
    assert mod.finished(2, 3.5, 500, 600) == "stopped with an error (exit 2)"  # auto's one-line error: not a finish


def test_own_check_reads_the_verdict_line(mod: Any) -> None:
    out = "(no diff from auto, or an empty one: the original)\nmatmul_chain: PASS (0 of 64 sampled entries wrong) checksum 1.2e+10\n"
    assert mod.own_check(out) == {"verdict": "PASS", "line": "matmul_chain: PASS (0 of 64 sampled entries wrong) checksum 1.2e+10"}
    assert mod.own_check("matmul_chain: FAIL (3 of 64 sampled entries wrong) checksum 1\n")["verdict"] == "FAIL"
    assert mod.own_check("make: *** [Makefile:3] Error 1\n") == {"verdict": "none", "line": "make: *** [Makefile:3] Error 1"}


def test_no_report_says_so(mod: Any, tmp_path: Path) -> None:
    (tmp_path / "gpu.txt").write_text("name, driver_version, memory.total [MiB]\nNVIDIA H200, 570.1, 143771 MiB\n")
    rc = mod.main(["--report", str(tmp_path / "missing.json"), "--wall-s", "515.2", "--rc", "124", "--deadline", "500",
                   "--gpu", str(tmp_path / "gpu.txt"), "--commit", "abc1234", "--out", str(tmp_path / "out")])
    assert rc == 0
    s = json.loads((tmp_path / "out" / "long_kernel.json").read_text())
    assert s["report_found"] is False and s["finished_within_limit"] == "not decided" and s["kernels"] == []
    assert s["gpu"] == "NVIDIA H200, 570.1, 143771 MiB" and s["commit"] == "abc1234"
    assert s["label"] == "in-sample (our own application)" and s["own_check_after"]["verdict"] == "none"
    md = (tmp_path / "out" / "long_kernel.md").read_text()
    assert "Finished within 600 s: not decided" in md and "wrote no auto-report.json" in md


@pytest.mark.slow
@needs_cc
def test_summary_of_a_real_auto_run_on_pocl(mod: Any, solver: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    work, diff = tmp_path / "work", tmp_path / "auto.diff"
    t0 = time.monotonic()
    proc = run_cli("auto", str(solver), "--build-cmd", "make", "--run-cmd", "./ocl_solver -k kernels", "--top", "2",
                   "--max-evals", "2", "--rounds", "1", "--runs", "2", "--work", str(work), "--diff", str(diff))
    wall = time.monotonic() - t0
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    # the application after: a fresh copy with auto's diff applied, built and run, as the GPU script does
    after = tmp_path / "after"
    shutil.copytree(solver, after)
    if diff.read_bytes():
        subprocess.run(["patch", "-s", "-p1", "-i", str(diff)], cwd=after, check=True, timeout=60)
    subprocess.run(["make", "-s"], cwd=after, check=True, capture_output=True, timeout=300)
    check = subprocess.run(["./ocl_solver", "-k", "kernels"], cwd=after, capture_output=True, text=True, timeout=300)
    (tmp_path / "check.txt").write_text(check.stdout)
    out = tmp_path / "out"
    assert mod.main(["--report", str(work / "auto-report.json"), "--wall-s", f"{wall:.3f}", "--rc", str(proc.returncode),
                     "--deadline", "500", "--commit", "c0ffee", "--check", str(tmp_path / "check.txt"),
                     "--command", "s2s auto ocl_solver ...", "--out", str(out)]) == 0
    s = json.loads((out / "long_kernel.json").read_text())
    report = json.loads((work / "auto-report.json").read_text())
    assert s["finished_within_limit"] == "yes" and s["auto_rc"] == proc.returncode and s["gpu"] == "unknown"
    assert s["auto_wall_s"] >= report["stages"]["total"] > 0
    assert {"scan", "profile", "capture", "optimize", "total"} <= set(s["stages_s"])
    by = s["app_runs_by_purpose"]
    assert by["profile"]["count"] == 2 and by["capture"]["count"] == 1  # one instrumented run captures both top kernels
    assert sum(r["count"] for r in by.values()) == len(report["app_runs"])
    assert by["profile"]["total_s"] == pytest.approx(sum(r["seconds"] for r in report["app_runs"] if r["purpose"] == "profile"), abs=0.01)
    assert "instrumented build" in by["capture"]["what"][0] and "matmul" in by["capture"]["what"][0]
    if report["reintegrated"]:
        assert s["unlisted_compare_s"] is not None and s["unlisted_compare_s"] >= 0
        assert by["before"]["count"] == 2 and by["after"]["count"] == 2 and by["profile_after"]["count"] == 2
    rows = {k["kernel"]: k for k in s["kernels"]}
    assert set(rows) == {"matvec", "matmul", "jacobi2d", "residual_norm"}
    assert rows["jacobi2d"]["launches"] == 200
    assert rows["jacobi2d"]["ms_per_launch"] == pytest.approx(rows["jacobi2d"]["total_ms"] / 200, abs=0.002)
    top = [k["kernel"] for k in report["kernels"]]
    assert len(top) == 2 and all(rows[k]["status"] and rows[k]["captured_launch"] >= 1 for k in top)
    assert all(rows[k]["status"] == "not among the top kernels" for k in set(rows) - set(top))
    assert all(isinstance(rows[k]["evaluations"], int) for k in top if not rows[k]["status"].startswith("capture failed"))
    assert s["own_check_after"]["verdict"] == "none" and "checksum" in s["own_check_after"]["line"]  # it prints no PASS line
    md = (out / "long_kernel.md").read_text()
    assert "Finished within 600 s: yes" in md and "| jacobi2d | 200 |" in md and "| capture | 1 |" in md
