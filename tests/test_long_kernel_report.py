"""bench/long_kernel_report.py (bench/gpu_long_kernel.sh's summary): its verdicts on auto's wall time against the
10-minute limit, the application's own check line, and a run that wrote no report. Its summary of a real
capture-first `s2s auto` run (stages, application runs by purpose, each kernel's time per launch and outcome) is
checked on the report of tests/test_auto_capture.py's end-to-end run on PoCL."""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

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


# the summary of a real capture-first auto run (on PoCL): tests/test_auto_capture.py's end-to-end test reads its report
# with this script (one auto run for both)
