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


def test_each_meps_evaluations_say_where_their_time_went(mod: Any, tmp_path: Path) -> None:
    from s2s.mep.history import History

    work = tmp_path / "work"
    (work / "mep-matmul").mkdir(parents=True)
    h = History(work / "mep-matmul" / "history.sqlite")
    for cid, run_s, checks in (("v1", 40.0, 30.0), ("v2", 10.0, 2.0), ("v3", 12.0, 3.0)):
        h.add(cid, 1, "pass:x", None, cid, None)
        h.finish(cid, "ok", {"verdict": "ok", "build_seconds": 8.0, "run_seconds": run_s, "speedup": 2.0,
                             "phase_seconds": {"checks": checks, "timing": 6.0},
                             **({"ref_cache": {"read": 4, "written": 0}} if cid != "v1" else {})})
    h.add("v4", 1, "pass:y", None, "v4", None)  # never finished: not an evaluation
    h.db.close()
    (work / "mep-broken").mkdir()
    (work / "mep-broken" / "history.sqlite").write_text("not a database")
    times = mod.evaluation_times(work)
    assert [t["mep"] for t in times] == ["mep-matmul"]
    t = times[0]
    assert [e["id"] for e in t["evaluations"]] == ["v1", "v2", "v3"] and t["evaluations"][1]["ref_cache"] == {"read": 4, "written": 0}
    assert t["median_run_s"] == 12.0 and t["total_run_s"] == 62.0 and t["median_build_s"] == 8.0
    assert t["median_phases_s"] == {"checks": 3.0, "timing": 6.0}
    rc = mod.main(["--report", str(tmp_path / "missing.json"), "--wall-s", "100", "--rc", "0", "--deadline", "500",
                   "--out", str(tmp_path / "out"), "--work", str(work)])
    assert rc == 0
    md = (tmp_path / "out" / "long_kernel.md").read_text()
    assert "| mep-matmul | 3 | 8.0 | 12.0 | 62.0 | checks 3.0, timing 6.0 |" in md
    assert mod.evaluation_times(tmp_path / "nowhere") == [] and mod.evaluation_times(None) == []
