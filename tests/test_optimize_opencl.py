"""The optimization loop end to end on the OpenCL sample, on PoCL: real builds, real runs, real timing."""
from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SAMPLES, run_cli

from s2s.extract.mep_writer import make_mep
from s2s.optimize.loop import Options, optimize


@pytest.fixture(scope="module")
def matmul_mep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("opt") / "mep-matmul"
    make_mep(str(SAMPLES / "ocl_solver"), "matmul", str(out))
    return out


@pytest.mark.slow
def test_builtin_loop_finds_verified_speedup(matmul_mep: Path, tmp_path: Path) -> None:
    out = optimize(matmul_mep, Options(max_evals=14, rounds=3, patterns=str(tmp_path / "patterns.json")))
    assert out.best_id is not None and out.best_speedup > 1.1, out
    best = next(r for r in out.rows if r.id == out.best_id)
    assert best.status == "ok" and all(o["ok"] for o in best.result["outputs"])  # type: ignore[index]
    assert out.evaluations <= 14
    # the win is stored as a pattern for the next kernel
    assert "smem-tiling" in (tmp_path / "patterns.json").read_text() or "pass" in best.origin


@pytest.mark.slow
def test_report_writes_markdown_html_and_plot(matmul_mep: Path) -> None:
    res = run_cli("report", str(matmul_mep))
    assert res.returncode == 0, res.stderr
    md = (matmul_mep / "report.md").read_text()
    assert "Winner" in md and "| round |" in md
    assert (matmul_mep / "report.png").read_bytes()[:4] == b"\x89PNG"
    assert "<table" in (matmul_mep / "report.html").read_text()


@pytest.mark.slow
def test_resume_after_kill_9_keeps_finished_evaluations(tmp_path: Path) -> None:
    mep = tmp_path / "mep-mv"
    make_mep(str(SAMPLES / "ocl_solver"), "matvec", str(mep))
    cmd = [sys.executable, "-m", "s2s", "optimize", str(mep), "--max-evals", "8", "--no-patterns", "--rounds", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    db = mep / "history.sqlite"
    deadline = time.time() + 240
    finished = 0
    while time.time() < deadline and proc.poll() is None:
        if db.exists():
            try:
                finished = sqlite3.connect(db).execute("SELECT COUNT(*) FROM candidates WHERE status != 'pending'").fetchone()[0]
            except sqlite3.OperationalError:
                finished = 0
            if finished >= 2:
                break
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = {r[0]: r[1] for r in sqlite3.connect(db).execute("SELECT id, status FROM candidates WHERE status != 'pending'")}
    assert len(before) >= 2
    res = run_cli("optimize", str(mep), "--max-evals", "8", "--no-patterns", "--rounds", "2")
    assert res.returncode in (0, 1), res.stderr
    after = {r[0]: r[1] for r in sqlite3.connect(db).execute("SELECT id, status FROM candidates")}
    for cid, status in before.items():
        assert after[cid] == status  # nothing finished was lost or redone
    evaluated = sum(1 for s in after.values() if s not in ("pending",))
    assert evaluated <= 8 + 1


def test_optimize_refuses_unfilled_mep(tmp_path: Path) -> None:
    tree = tmp_path / "app"
    tree.mkdir()
    (tree / "k.cu").write_text("__global__ void scale(float* x, int n) { x[threadIdx.x] *= 2; }\n"
                               "void run(float* d, int n, int t) { scale<<<n / t, t>>>(d, n); }\n")
    mep = tmp_path / "m"
    make_mep(str(tree), "scale", str(mep))
    res = run_cli("optimize", str(mep))
    assert res.returncode == 2 and "fill in" in res.stderr and "Traceback" not in res.stderr
