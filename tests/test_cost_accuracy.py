"""The cost model's prediction is recorded for every candidate as it is proposed (an older history gains the columns),
and the report, `s2s report --json` and bench/cost_model_accuracy.py judge it against the measurements: Spearman
rank correlation, the predicted best against the measured best, the predictions that were most wrong."""
from __future__ import annotations

import json
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from mep_util import ParamSpec, make_mep, manifest

from s2s.lang.kernel_facts import kernel_facts
from s2s.mep.history import ADDED_COLUMNS, History
from s2s.optimize.candidate import Candidate
from s2s.optimize.cost import ORIGINAL_KEY, original_prediction, record
from s2s.optimize.proposers.base import State
from s2s.optimize.proposers.builtin import apply_pipeline
from s2s.optimize.report_data import model_accuracy, ranks, spearman

GEMV = """__global__ void gemv(int m, int n, const float* a, const float* x, float* y)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) {
        y[j] = 0.0f;
        for (int i = 0; i < m; i++)
            y[j] += a[i * n + j] * x[i];
    }
}
"""
PARAMS = [ParamSpec("m", "int", "scalar", "int", value=4096), ParamSpec("n", "int", "scalar", "int", value=4096),
          ParamSpec("a", "const float *", "in", "float", count=4096 * 4096),
          ParamSpec("x", "const float *", "in", "float", count=4096), ParamSpec("y", "float *", "out", "float", count=4096)]
MANIFEST = manifest("gemv", "cuda", "kernel.cu", PARAMS, (16, 1, 1), (256, 1, 1))


def _res(ref: float, var: float, **kw: object) -> dict[str, object]:
    return {"reference": {"median_us": ref, "spread_us": ref * 0.02}, "variant": {"median_us": var, "spread_us": var * 0.02},
            "speedup": ref / var, "device": "NVIDIA H200", **kw}


def test_spearman_with_ties_and_degenerate_inputs() -> None:
    assert ranks([10.0, 30.0, 20.0, 20.0]) == [1.0, 4.0, 2.5, 2.5]
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks x = 1,2,3,4 ; y = 1,3,2,4: Pearson of the ranks is 1 - 6*2/(4*15) = 0.8
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([1, 2], [1, 2]) is None and spearman([1, 2, 3], [5, 5, 5]) is None


def test_an_older_history_gains_the_prediction_columns(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "history.sqlite")
    db.executescript("""CREATE TABLE candidates (id TEXT PRIMARY KEY, round INTEGER NOT NULL, origin TEXT NOT NULL, parent TEXT,
        source_sha TEXT NOT NULL, launch TEXT, status TEXT NOT NULL, speedup REAL, ref_us REAL, var_us REAL, build_log TEXT,
        repairs INTEGER DEFAULT 0, result TEXT, created REAL NOT NULL, finished REAL, captured TEXT, captured_key TEXT,
        captured_result TEXT);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO candidates (id, round, origin, source_sha, status, speedup, created) VALUES ('v1', 1, 'pass:a', 'a', 'ok', 2.0, 1.0);""")
    db.commit()
    db.close()
    h = History(tmp_path / "history.sqlite")
    assert h.get("v1").predicted_us is None  # type: ignore[union-attr]
    assert model_accuracy(h.rows(), None) is None  # nothing predicted: nothing to judge, and no error
    h.set_prediction("v1", 12.5e-6, {"bound": "dram"})
    h.finish("v1", "ok", _res(100.0, 50.0))  # the measurement lands beside the prediction, which stays
    h.close()
    cols = {r[1] for r in sqlite3.connect(tmp_path / "history.sqlite").execute("PRAGMA table_info(candidates)")}
    assert {"predicted_us", "prediction"} <= cols and {n for n, _ in ADDED_COLUMNS} <= cols
    row = History(tmp_path / "history.sqlite").get("v1")
    assert row is not None and row.predicted_us == pytest.approx(12.5) and row.prediction == {"bound": "dram"}
    assert row.var_us == 50.0


def test_record_keeps_each_candidates_prediction_and_the_originals(tmp_path: Path) -> None:
    src = GEMV.encode()
    state = State(manifest=MANIFEST, original=src, kernel="gemv", dialect="cuda", facts=kernel_facts(src, "cuda", "gemv"))
    cands = [apply_pipeline(p, state) for p in ("restrict-const", "split-reduction{splits=16}")]
    assert all(isinstance(c, Candidate) for c in cands), cands
    opaque = Candidate(b"__global__ void gemv(int m, int n, const float* a, const float* x, float* y) { }", "llm:x")
    h = History(tmp_path / "history.sqlite")
    for c in [*cands, opaque]:
        h.add(c.id, 1, c.origin, None, c.source_sha, None)  # type: ignore[union-attr]
    record(h, state, [*cands, opaque])  # type: ignore[list-item]
    rows = {r.origin: r for r in h.rows()}
    base = original_prediction(h)
    meta = json.loads(h.meta(ORIGINAL_KEY) or "{}")
    h.close()
    assert base is not None and meta["device"] == "NVIDIA H200" and meta["bound"] in {"dram", "l1", "compute"}
    naive, split = rows["pass:restrict-const"], rows["pass:split-reduction{splits=16}"]
    assert naive.predicted_us and split.predicted_us and split.predicted_us < naive.predicted_us  # 16 blocks vs 256
    assert split.prediction and split.prediction["fill"] > naive.prediction["fill"]  # type: ignore[index]
    # an empty body has no loop, so it is predicted at once: every candidate that the model reads gets a number
    assert rows["llm:x"].predicted_us is not None


def _history(mep: Path, rows: list[tuple[str, str, float | None, dict[str, object] | None]], original_us: float | None) -> None:
    h = History(mep / "history.sqlite")
    for cid, status, pred, res in rows:
        h.add(cid, 1, f"pass:{cid}", None, cid, None)
        if pred is not None:
            h.set_prediction(cid, pred * 1e-6, {"bound": "dram", "device": "NVIDIA H200"})
        h.finish(cid, status, res or {"messages": ["failed"]})
    if original_us is not None:
        h.set_meta(ORIGINAL_KEY, json.dumps({"predicted_us": original_us, "device": "NVIDIA H200"}))
    h.set_meta("noise_band", json.dumps({"low": 0.97, "high": 1.03}))
    h.close()


# measured speedups: va 4.0, vb 2.0, vc 1.25, vd 0.8 ; predicted (original 100 µs): va 2.0x, vb 5.0x, vc 1.11x, vd 0.5x
SYNTH = [("va", "ok", 50.0, _res(400.0, 100.0)), ("vb", "ok", 20.0, _res(400.0, 200.0)),
         ("vc", "ok", 90.0, _res(400.0, 320.0)), ("vd", "ok", 200.0, _res(400.0, 500.0)),
         ("ve", "wrong-output", 10.0, None), ("vf", "compile-failed", None, None)]


def test_accuracy_judges_ranking_best_and_the_most_wrong(tmp_path: Path) -> None:
    mep = make_mep(tmp_path / "m", GEMV, MANIFEST)
    _history(mep, SYNTH, 100.0)
    h = History(mep / "history.sqlite")
    acc = model_accuracy(h.rows(), original_prediction(h), "NVIDIA H200", (0.97, 1.03))
    h.close()
    assert acc is not None and (acc.candidates, acc.predicted) == (6, 5)
    assert [j.id for j in acc.judged] == ["va", "vb", "vc", "vd"]  # verified only, fastest measured first
    # predicted order (fastest first) vb, va, vc, vd against measured va, vb, vc, vd: one swap of four -> 0.8
    assert acc.spearman == pytest.approx(0.8)
    assert (acc.predicted_best, acc.measured_best, acc.predicted_best_rank) == ("vb", "va", 2)
    assert acc.side_agreement == (4, 4)  # all four outside the noise band, each on the predicted side of 1.0
    worst = acc.worst[0]  # vb: predicted 5x, measured 2x; va: predicted 2x, measured 4x (both off by 2.5x / 2x)
    assert worst.id == "vb" and worst.wrong_by == pytest.approx(2.5) and worst.optimistic
    assert acc.worst[1].id == "va" and not acc.worst[1].optimistic and acc.measured_device == "NVIDIA H200"
    # without the original's prediction: the same ranking, errors from the calibrated time ratios
    h = History(mep / "history.sqlite")
    acc2 = model_accuracy(h.rows(), None)
    h.close()
    assert acc2 is not None and acc2.spearman == pytest.approx(0.8) and all(j.predicted_speedup is None for j in acc2.judged)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.slow
def test_report_html_json_and_the_bench_aggregator(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from s2s.optimize.report import build_report

    mep = make_mep(tmp_path / "meps" / "gemv", GEMV, MANIFEST)
    _history(mep, SYNTH, 100.0)
    md_path, html_path, png = build_report(mep)
    md = md_path.read_text()
    assert "Cost model (the model's numbers are for NVIDIA H200; measured on NVIDIA H200): 5 of 6 candidates predicted" in md
    assert "- Spearman rank correlation of predicted and measured speedup: +0.80" in md
    assert "- predicted best `vb` (predicted 20.00 µs, 5.00x) measured 2.00x; measured best `va` 4.00x" in md
    assert "measured #2 of 4" in md and "- most wrong: `vb` (`pass:vb`)" in md and "off by 2.5x (optimistic)" in md
    assert "| predicted µs |" in md and "| 50.00 |" in md
    html = html_path.read_text()
    assert "Spearman rank correlation" in html and "<th>predicted µs</th>" in html
    assert '<svg class="roofline"' in html and 'class="point winner"' in html  # the roofline in the HTML itself
    assert png is not None and _png_size(png)[0] > 3 * 6.4 * 110 * 0.9  # three panels: candidates, roofline, model

    old = make_mep(tmp_path / "meps" / "old", GEMV, MANIFEST)  # a history from before predictions were recorded
    _history(old, [("va", "ok", None, _res(400.0, 100.0))], None)
    r = run_cli("report", str(mep), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["cost_model"]["spearman"] == pytest.approx(0.8) and doc["cost_model"]["worst"][0] == "vb"
    assert {c["id"]: c["predicted_us"] for c in doc["candidates"]}["va"] == pytest.approx(50.0)
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "gemv.json").write_text(r.stdout)

    bench = [sys.executable, str(ROOT / "bench" / "cost_model_accuracy.py")]
    out = subprocess.run([*bench, str(tmp_path / "meps"), "--out", str(tmp_path / "res")], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "median Spearman +0.80 (defined on 1)" in out.stdout and "| gemv | old | 1 | 0 (history without predictions)" in out.stdout
    assert "| gemv | gemv | 6 | 5 | 4 | +0.80 | vb (2.00x) | va (4.00x) | 2 | 4/4 | 2.00x |" in out.stdout
    assert "| gemv | vb | `pass:vb` | 20.00 | 5.00 | 2.00 | 2.5x | optimistic |" in out.stdout
    res = json.loads((tmp_path / "res" / "cost_model_accuracy.json").read_text())
    assert res["judged_meps"] == 1 and res["by_pass"]["vb"]["geomean_predicted_over_measured"] == pytest.approx(2.5)
    # the JSON written by `s2s report --json` gives the same judgement
    again = subprocess.run([*bench, str(tmp_path / "reports" / "gemv.json")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert again.returncode == 0 and "| gemv | gemv | 6 | 5 | 4 | +0.80 |" in again.stdout
    folder = subprocess.run([*bench, str(tmp_path / "reports")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert folder.returncode == 0 and "| gemv | gemv | 6 | 5 | 4 | +0.80 |" in folder.stdout  # a folder of them too
    bad = subprocess.run([*bench, str(tmp_path / "nowhere")], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "nowhere" in bad.stderr
