"""Whole applications before and after: reintegrate every winner of a GPU optimization run into a copy of
each sample, build both, run both, compare every checksum and the run time.

    python bench/app_bench.py --work /tmp/s2s-gpu-work --out DIR [--runs 3] [--make-vars "MAT_N=2048 ..."]

A winner is reintegrated only when it was verified and at least 5% faster in its MEP. An MEP whose outputs
were checked with a widened tolerance (float sums by atomics) is first held to the application's own data:
`s2s capture --into` records the kernel's launch in a real run of the application, and `s2s verify` checks the
winners on it; `best` then skips any that failed there.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from provenance import write_result

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = {"heat3d_cuda": "heat3d_cuda.", "hip_particles": "hip_particles."}


def _checksums(text: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"checksum\s+(\S+)\s*=\s*(\S+)", text)}


def _phases(text: str) -> dict[str, float]:
    """The application's own GPU-timed phases: `heat phase (...): 12.3 ms` -> {"heat phase (...)": 12.3}."""
    return {m.group(1).strip(): float(m.group(2)) for m in re.finditer(r"^([^\n:]+):\s*([0-9.]+) ms", text, re.M)}


def _build(tree: Path, make_vars: list[str]) -> str:
    b = subprocess.run(["make", "-s", "-j8", *make_vars], cwd=tree, capture_output=True, text=True)
    return "" if b.returncode == 0 else "build failed: " + (b.stderr or b.stdout)[-600:]


def _alternate(trees: tuple[Path, Path], make_vars: list[str], runs: int) -> list[tuple[dict[str, float], list[float], dict[str, float], str]]:
    """Run before and after in turn, `runs` times each: (checksums, wall seconds, median phase ms, error) per tree."""
    got: list[dict[str, Any]] = [{"sums": {}, "times": [], "phases": [], "err": _build(t, make_vars)} for t in trees]
    for _ in range(runs):
        for tree, g in zip(trees, got):
            if g["err"]:
                continue
            t0 = time.perf_counter()
            r = subprocess.run(["make", "-s", "run", *make_vars], cwd=tree, capture_output=True, text=True)
            g["times"].append(time.perf_counter() - t0)
            if r.returncode != 0:
                g["err"] = "run failed: " + (r.stderr or r.stdout)[-600:]
                continue
            g["sums"] = _checksums(r.stdout)
            g["phases"].append(_phases(r.stdout))
    return [(g["sums"], g["times"], {k: statistics.median(p[k] for p in g["phases"]) for k in g["phases"][0]} if g["phases"] else {},
             g["err"]) for g in got]


def _hold_to_app_data(mep: Path, tree: Path, make_vars: list[str]) -> str:
    """For an MEP with a widened tolerance: its winners checked on the application's own data ("" when not needed)."""
    from s2s.capture.verify import hold_to_app_data
    from s2s.mep.manifest import load

    m = load(mep)
    if m.capture or not any(p.tol_from for p in m.params):
        return ""
    vars_ = " ".join(make_vars)
    got = hold_to_app_data(tree, m.kernel, mep, f"make -s -j8 {vars_}", f"make -s run {vars_}", top=3, timeout=300)
    return "; ".join(f"{c.id} ({c.origin}, {c.speedup:.2f}x): {c.verdict}{' - ' + c.message if c.message else ''}" for c in got.checked)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/s2s-gpu-work")
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--min-speedup", type=float, default=1.05)
    ap.add_argument("--make-vars", default="")
    args = ap.parse_args()
    from s2s.base.errors import UserError
    from s2s.mep.history import best_of
    from s2s.reintegrate.splice import apply_in_place, plan

    work = Path(args.work)
    make_vars = args.make_vars.split()
    report: list[dict[str, Any]] = []
    for sample, prefix in SAMPLES.items():
        base = work / f"app-{sample}-before"
        after = work / f"app-{sample}-after"
        for d in (base, after):
            if d.exists():
                shutil.rmtree(d)
            shutil.copytree(ROOT / "samples" / sample, d, ignore=shutil.ignore_patterns("build"))
        applied, skipped, checked = [], [], []
        for mep in sorted(work.glob("*" + prefix + "*")):
            if not (mep / "history.sqlite").is_file():
                continue
            best = best_of(mep)
            if best is None or (best.speedup or 0) < args.min_speedup:
                skipped.append(f"{mep.name}: no verified win >= {args.min_speedup}x")
                continue
            try:
                try:
                    held = _hold_to_app_data(mep, base, make_vars)
                except Exception as exc:  # noqa: BLE001 - a failed capture is a finding of the benchmark
                    skipped.append(f"{mep.name}: not reintegrated: the check on captured data did not complete: {exc}")
                    continue
                if held:
                    checked.append(f"{mep.name}: {held}")
                    best = best_of(mep)
                    if best is None or (best.speedup or 0) < args.min_speedup:
                        skipped.append(f"{mep.name}: no win >= {args.min_speedup}x left after the check on captured data")
                        continue
                p = plan(mep, "best", str(after))
                apply_in_place(p, None, None)
                applied.append(f"{mep.name}: {best.origin} ({best.speedup:.2f}x)")
            except UserError as err:
                skipped.append(f"{mep.name}: {err.one_line()}")
        (sums0, t0, ph0, err0), (sums1, t1, ph1, err1) = _alternate((base, after), make_vars, args.runs)
        same = {k: (abs(sums1.get(k, float("nan")) - v) <= 1e-3 * max(1.0, abs(v))) for k, v in sums0.items()}
        row = {"sample": sample, "applied": applied, "skipped": skipped, "checked_on_captured_data": checked, "errors": [e for e in (err0, err1) if e],
               "runs": args.runs, "before_s": statistics.median(t0) if t0 else None, "after_s": statistics.median(t1) if t1 else None,
               "before_all_s": t0, "after_all_s": t1,
               "phases_ms_before": ph0, "phases_ms_after": ph1, "checksums_before": sums0, "checksums_after": sums1, "same_results": same,
               "diff": subprocess.run(["diff", "-ru", str(base), str(after)], capture_output=True, text=True).stdout[-20000:]}
        if row["before_s"] and row["after_s"]:
            row["app_speedup"] = row["before_s"] / row["after_s"]
        report.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "diff"}), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_result(out, "app_bench", report)


if __name__ == "__main__":
    main()
