"""bench/auto_apps.py: each result row names its application (the auto report's "app", the before/after
comparison, used to overwrite it with {}), and the markdown says why an unchanged app's wall time is not re-measured."""
from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import pytest
from conftest import ROOT


@pytest.fixture
def bench() -> object:
    spec = importlib.util.spec_from_file_location("auto_apps_bench", ROOT / "bench" / "auto_apps.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_rows_name_the_application(bench: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    why = "not re-measured: nothing was reintegrated"
    report = {"profile": [{"kernel": "gpu_kernel_three", "total_ms": 3.47, "launches": 375}],
              "kernels": [{"kernel": "gpu_kernel_three", "launch": 264, "speedup": 1.01, "status": "not reintegrated"}],
              "app": {"remeasured": False, "why": why}, "notes": [], "reintegrated": False}

    def fake_s2s(*args: str, timeout: float, log: Path) -> int:
        work = Path(args[args.index("--work") + 1])
        work.mkdir(parents=True)
        (work / "auto-report.json").write_text(json.dumps(report))
        return 1

    monkeypatch.setattr(bench, "s2s", fake_s2s)
    args = argparse.Namespace(top=1, max_evals=2, rounds=1, runs=2)
    res = bench.run_app("npb-cg", {"tree": "npb-cg", "build": "make", "run": "./cg"}, tmp_path, tmp_path / "w", 60, args)  # type: ignore[attr-defined]
    assert res["app"] == "npb-cg" and res["app_run"] == report["app"]
    md = bench.markdown({"gpu": "H200", "date": "d", "commit": "c", "results": [res]})  # type: ignore[attr-defined]
    row = next(ln for ln in md.splitlines() if ln.startswith("| npb-cg |"))
    assert why in row and "{}" not in row
