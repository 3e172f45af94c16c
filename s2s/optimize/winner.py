"""Declaring a winner honestly (issue 15, "Honest measurement").

The loop's speedups are single measurements, and the best of many noisy ones is biased upwards. Before a winner
is declared, the top candidates are checked and timed again, each in a fresh alternation with the original, and
the reported speedup is that re-timing's. A win must also lie above the noise band: the speedups the original
reaches against itself on this MEP, measured once per MEP and kept in the history (meta `noise_band`).

Recorded in the history: meta `noise_band` {"low", "high", "runs": [speedup, ...], "device"}; for each re-timed
candidate its result gains `retimed` {speedup, reference, variant, seed, verdict} and keeps its first measurement
under `first`; its speedup column becomes the re-timed one (so every reader of the history sees that one); meta
`winner` {"id", "speedup", "noise_high", "why"} says what was declared, and why not when nothing was.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from s2s.mep.history import History, Row
from s2s.mep.measure import Measurement

TOP = 3  # candidates re-timed before a winner is declared
EXTRA = 3  # more, when a re-timing drops the leader below a candidate not yet re-timed
NOISE_RUNS = 3  # the original against itself
# fewer for a long original (each run times at least three pairs of it: a 1.7 s kernel's three runs took 40 s of the
# device before any candidate); two runs of three pairs each still give the band
LONG_NOISE_US = 100_000.0
LONG_NOISE_RUNS = 2
# the least win ever declared, however narrow the band: three runs of a long, steady kernel can agree to 1.0000x,
# and a variant 1.00002x "faster" is then no evidence of anything (the H200 samples run declared such a win)
MIN_WIN = 1.01

# a check-and-time of the MEP's original (None) or a variant that holds the device as a timing must (the optimize loop
# passes s2s.mep.evaluate.evaluate with the harness's own lock: checks beside other evaluations, the timing alone)
Evaluate = Callable[[Path, "str | None"], Measurement]


def noise_band(mep_dir: Path, history: History, evaluate: Evaluate, runs: int = NOISE_RUNS) -> dict[str, Any]:
    """The original timed against itself `runs` times (each a fresh alternation): the band of speedups that noise
    alone gives on this MEP. Measured once and kept in the history."""
    raw = history.meta("noise_band")
    if raw:
        try:
            band = json.loads(raw)
            if isinstance(band, dict) and isinstance(band.get("high"), (int, float)):
                return band
        except ValueError:
            pass
    speeds, device = [], ""
    for n in range(1, runs + 1):
        m = evaluate(mep_dir, None)
        if m.ok and m.speedup:
            speeds.append(float(m.speedup))
            device = m.device or device
        if n >= LONG_NOISE_RUNS and m.ref is not None and m.ref.median_us >= LONG_NOISE_US:  # a long kernel: enough
            break
    if not speeds:
        return {"low": 1.0, "high": 1.0, "runs": [], "device": device, "note": "the original could not be timed against itself"}
    both = speeds + [1.0 / s for s in speeds]  # a ratio of two equal kernels is as likely s as 1/s
    band = {"low": round(min(both), 4), "high": round(max(both), 4), "runs": [round(s, 4) for s in speeds], "device": device}
    history.set_meta("noise_band", json.dumps(band))
    return band


def _ranked(history: History) -> list[Row]:
    ok = [r for r in history.rows() if r.status == "ok" and r.speedup and not r.failed_on_capture]
    return sorted(ok, key=lambda r: r.speedup or 0.0, reverse=True)


def retime(mep_dir: Path, history: History, row: Row, evaluate: Evaluate) -> Row | None:
    """Check and time `row` again against the original (fresh seeds, a fresh alternation); its row then holds that."""
    m = evaluate(mep_dir, row.id)
    first = dict((row.result or {}).get("first") or {"speedup": row.speedup, "reference": (row.result or {}).get("reference"),
                                                     "variant": (row.result or {}).get("variant")})
    result = m.to_json()
    if "worker" in (row.result or {}):  # where the first evaluation ran (the execution layer's record) stays known
        result["worker"] = (row.result or {})["worker"]
    result["first"] = first
    result["retimed"] = {"speedup": m.speedup, "reference": result.get("reference"), "variant": result.get("variant"),
                         "seed": m.seed, "verdict": m.verdict}
    kept = history.db.execute("SELECT build_log FROM candidates WHERE id=?", (row.id,)).fetchone()
    build_log = str(kept[0] or "") if kept else ""
    history.finish(row.id, m.verdict, result, build_log, row.repairs)
    return history.get(row.id)


def declare(mep_dir: Path, history: History, evaluate: Evaluate, *, top: int = TOP,
            noise: Evaluate | None = None) -> tuple[Row | None, dict[str, Any]]:
    """(the winner or None, what was declared). The top `top` verified candidates are re-timed; while the fastest
    after that is one not re-timed yet, it is re-timed too (at most EXTRA more). The winner is the fastest
    re-timed candidate whose speedup lies above the noise band (measured with `noise` where given: a timing
    without checks does for the original against itself)."""
    if not _ranked(history):
        decision: dict[str, Any] = {"id": None, "speedup": 1.0, "why": "no verified candidate"}
        history.set_meta("winner", json.dumps(decision))
        return None, decision
    band = noise_band(mep_dir, history, noise or evaluate)
    done: set[str] = set()
    for row in _ranked(history)[:top]:
        retime(mep_dir, history, row, evaluate)
        done.add(row.id)
    for _ in range(EXTRA):
        ranked = _ranked(history)
        if not ranked or ranked[0].id in done:
            break
        retime(mep_dir, history, ranked[0], evaluate)
        done.add(ranked[0].id)
    best = next((r for r in _ranked(history) if r.id in done), None)
    band_high = float(band.get("high", 1.0))
    high = max(band_high, MIN_WIN)
    if best is None or (best.speedup or 0.0) <= high:
        got = f"{best.speedup:.3f}x" if best and best.speedup else "none verified again"
        floor = f"; the least win declared is {MIN_WIN}x" if band_high < MIN_WIN else ""
        decision = {"id": None, "speedup": 1.0, "noise_high": high, "retimed": sorted(done),
                    "why": f"no win: the best re-timed speedup ({got}) does not exceed the noise band of the original "
                           f"against itself ({band.get('low')}x..{band_high}x){floor}"}
        history.set_meta("winner", json.dumps(decision))
        return None, decision
    decision = {"id": best.id, "speedup": best.speedup, "noise_high": high, "retimed": sorted(done),
                "why": f"re-timed {best.speedup:.3f}x, above the noise band (up to {high}x)"}
    history.set_meta("winner", json.dumps(decision))
    return best, decision
