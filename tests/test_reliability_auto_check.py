"""Issue 30, results lost: `auto --check-cmd` with a failing check wrote the combined diff and reported the kernel
"reintegrated". Capture-first auto on PoCL (samples/ocl_solver) with every verified winner taken (min_speedup 0) and a
check that always fails: no diff, the kernel not kept with the check's own words, the tree unchanged."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from safety_util import fingerprint

from s2s.auto import run_auto_app
from s2s.optimize.loop import Options

pytest.importorskip("pyopencl")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None, reason="make and gcc needed")
def test_a_failing_check_keeps_no_diff_and_says_why(solver: Path, tmp_path: Path) -> None:
    before = fingerprint(solver)
    work, diff = tmp_path / "work", tmp_path / "auto.diff"
    result = run_auto_app(str(solver), "make", "./ocl_solver -k kernels", top=1, work=work, diff_path=diff,
                          options=Options(max_evals=3, rounds=1, use_patterns=False, jobs=1), kernels=["matmul"],
                          check_cmd="echo 'number 1 differs: planted by the test'; exit 1", runs=1, min_speedup=0.0,
                          with_sequences=False, log=lambda s: None)
    (row,) = result.kernels
    assert row["winner"], row  # a verified candidate was reintegrated into the copy, then judged by the check
    assert row["status"].startswith("not kept") and "--check-cmd" in row["status"] and "exited 1" in row["status"], row
    assert "planted by the test" in row["status"]
    assert result.app["output_unchanged"] is False and not result.any_win
    assert diff.read_bytes() == b"" and result.diff == ""
    report = json.loads((work / "auto-report.json").read_text())
    assert report["reintegrated"] is False and report["kernels"][0]["status"] == row["status"]
    assert fingerprint(solver) == before
