"""Where one checked evaluation's time goes, and what the bounds probe once per reference saves (issue 15, task 6).

    python bench/gpu_probe_phases.py OUT_DIR [--only a,b] [--evals N] [--work DIR]

Per zoo kernel (default: a few of each family; kernels the catalog runs on captured data are left out): its MEP
extracted as bench/gpu_zoo.py extracts it, the original built once, then checked and timed against itself N times
(default 4), one at a time, under a device lock of its own (so that the harness reports its phases). Evaluations 1
and 3 run the bounds probe (the record deleted before 3), 2 and 4 find the record and skip it (--no-probe). Writes
OUT/probe_phases.{json,md}: per evaluation the verdict, run seconds and phase seconds (s2s.mep.backends.base._Phases:
start, host.setup, host.inputs, probe, host.probe, checks, host.checks, timing, host.timing), and per kernel the mean
run seconds with and without the probe. About 15 s per kernel on an H200 (the build ~8 s, each evaluation 1-3 s);
the default six kernels take about 2 minutes.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_zoo import extract  # noqa: E402
from provenance import commit, write_result  # noqa: E402
from zoo_catalog import BY_NAME  # noqa: E402

DEFAULT = ("axpy", "gemm_naive", "jacobi2d", "histo_global", "dot_atomic", "transpose_2d")


def one_kernel(name: str, work: Path, evals: int, lock: Path) -> dict[str, Any]:
    from s2s.mep import evaluate, probe_record

    row: dict[str, Any] = {"kernel": name, "evaluations": []}
    mep, unfilled, _fixes = extract(BY_NAME[name], work)
    if unfilled:
        return {**row, "error": "FILL-IN left: " + "; ".join(unfilled)}
    b = evaluate.build(mep, None)
    row["build_seconds"] = round(b.seconds, 2)
    if not b.ok:
        return {**row, "error": "the original does not build: " + (b.log or "; ".join(b.messages))[-400:]}
    for i in range(evals):
        if i == 2:
            probe_record.path_of(mep).unlink(missing_ok=True)  # probed again: a second pair of the two kinds
        t0 = time.monotonic()
        m = evaluate.run_built(b, harness_lock=lock)
        probed = not any("not repeated (--no-probe" in x for x in m.messages)
        row["device"] = m.device
        row["evaluations"].append({"probe": probed, "verdict": m.verdict, "run_seconds": round(m.run_seconds, 3),
                                   "wall_seconds": round(time.monotonic() - t0, 3), "phase_seconds": m.phase_seconds,
                                   "probe_message": next((x for x in m.messages if x.startswith("bounds probe")), "")})
    for kind, want in (("with_probe", True), ("without_probe", False)):
        runs = [e["run_seconds"] for e in row["evaluations"] if e["probe"] is want]
        row[f"mean_run_seconds_{kind}"] = round(statistics.mean(runs), 3) if runs else None
    return row


def markdown(doc: dict[str, Any]) -> str:
    keys = ["start", "host.setup", "host.inputs", "probe", "host.probe", "checks", "host.checks", "timing", "host.timing"]
    lines = [f"# One evaluation's time, by phase ({doc['device']}, commit {doc['commit']})", "",
             "Seconds per evaluation of the original against itself, one at a time under a device lock of its own.", "",
             "| kernel | # | probe | verdict | run s | " + " | ".join(keys) + " |",
             "|---|---|---|---|---|" + "---|" * len(keys)]
    for r in doc["kernels"]:
        if r.get("error"):
            lines.append(f"| {r['kernel']} | | | {r['error'][:80]} | |" + " |" * len(keys))
            continue
        for i, e in enumerate(r["evaluations"], 1):
            ps = e["phase_seconds"]
            lines.append(f"| {r['kernel']} | {i} | {'yes' if e['probe'] else 'no'} | {e['verdict']} | {e['run_seconds']:.2f} | "
                         + " | ".join(f"{ps[k]:.2f}" if k in ps else "" for k in keys) + " |")
    lines += ["", "| kernel | build s | mean run s with the probe | without | saved |", "|---|---|---|---|---|"]
    for r in doc["kernels"]:
        a, b = r.get("mean_run_seconds_with_probe"), r.get("mean_run_seconds_without_probe")
        saved = f"{a - b:.2f}" if a is not None and b is not None else ""
        lines.append(f"| {r['kernel']} | {r.get('build_seconds', '')} | {a} | {b} | {saved} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--only", default=",".join(DEFAULT), help="comma-separated zoo kernels")
    ap.add_argument("--evals", type=int, default=4)
    ap.add_argument("--work", default="", help="where the MEPs go (default: a temporary directory)")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    bad = [n for n in names if n not in BY_NAME or BY_NAME[n].capture]
    if bad:
        print(f"gpu_probe_phases.py: --only: not zoo kernels run on generated data: {', '.join(bad)}", file=sys.stderr)
        return 2
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="s2s-probe-phases-"))
    lock = work / "device.lock"
    work.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {"commit": commit(), "date": time.strftime("%Y-%m-%d"), "device": "?", "evals": args.evals,
                           "kernels": []}
    for name in names:
        doc["kernels"].append(one_kernel(name, work, args.evals, lock))
        doc["device"] = doc["kernels"][-1].get("device") or doc["device"]
        write_result(args.out, "probe_phases", doc, markdown(doc))
        print(f"{name}: done", flush=True)
    return 0 if all(not r.get("error") for r in doc["kernels"]) else 1


if __name__ == "__main__":
    sys.exit(main())
