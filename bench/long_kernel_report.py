"""One capture-first `s2s auto` run on an application whose hot kernel takes a second or more a launch (issue 26's
Done-when), summarized from its auto-report.json: whether it finished within the limit, auto's wall time, the
tool's wall time per stage, every application build and run by purpose, the kernels with their measured time per
launch, outcome and speedup, and the application's own check after reintegration.

    python3 bench/long_kernel_report.py --report WORK/auto-report.json --wall-s 412.3 --rc 0 --deadline 500 \
        --limit 600 --gpu OUT/gpu.txt --commit C --label "in-sample (our own application)" --check OUT/check.txt \
        --command "s2s auto ..." --out OUT [--name long_kernel] [--work WORK]

writes OUT/NAME.json and OUT/NAME.md. A report that is missing (auto killed before its first write) gives a summary
that says so. `finished` is "yes" when auto ended by itself (exit 0 or 1) within --limit seconds, "no" when it ran
past --limit, "not decided" when it was killed at a deadline shorter than the limit (a device call is shorter than
10 minutes), and "stopped with an error (exit N)" otherwise. With --work (auto's --work directory), each kernel's
evaluations from its MEP's history: where their time went (build, harness run, and the harness's phases: checks,
timing, host work, waiting for the device), so that a slow evaluation says why.
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import sqlite3
import statistics
import sys
from pathlib import Path
from typing import Any

_TIMEOUT_RC = (124, 137)  # timeout(1): the command ran past its limit (TERM), or was killed (KILL)
_OWN_CHECK = re.compile(r"\b(PASS|FAIL|ok|FAILED)\b")


def finished(rc: int | None, wall_s: float, deadline_s: float, limit_s: float) -> str:
    """Whether auto finished within `limit_s`: yes, no, not decided (killed at a deadline below the limit), or
    "stopped with an error" (an exit status other than auto's 0, a win kept, and 1, none kept)."""
    if rc is not None and rc not in _TIMEOUT_RC:
        if rc not in (0, 1):
            return f"stopped with an error (exit {rc})"
        return "yes" if wall_s <= limit_s else "no"
    return "no" if deadline_s >= limit_s else "not decided"


def app_runs_by_purpose(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every application build and run auto recorded, grouped by purpose: count, each one's what and seconds, their sum."""
    out: dict[str, dict[str, Any]] = {}
    for r in runs:
        row = out.setdefault(str(r.get("purpose", "?")), {"count": 0, "seconds": [], "what": [], "total_s": 0.0})
        secs = float(r.get("seconds") or 0.0)
        row["count"] += 1
        row["seconds"].append(round(secs, 3))
        what = str(r.get("what", ""))
        if "build_s" in r and "run_s" in r:  # one instrumented build and run for several kernels: its two parts
            what = f"instrumented build {float(r['build_s']):.1f} s + run {float(r['run_s']):.1f} s ({', '.join(r.get('kernels', []))})"
        row["what"].append(what)
        row["total_s"] = round(row["total_s"] + secs, 3)
    return out


def unlisted_compare(report: dict[str, Any]) -> float | None:
    """Seconds of the compare stage outside the before/after builds and runs auto lists (the output comparison, a
    --check-cmd; reports before the builds and warm-up runs were itemized left those out too)."""
    if "compare" not in report.get("stages", {}):
        return None
    listed = sum(float(r.get("seconds") or 0.0) for r in report.get("app_runs", []) if r.get("purpose") in ("before", "after"))
    return round(max(0.0, float(report["stages"]["compare"]) - listed), 3)


def kernels(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The profiled kernels, largest first, each with its time per launch and, where auto optimized it, its outcome."""
    chosen = {k["kernel"]: k for k in report.get("kernels", [])}
    out = []
    for p in report.get("profile", []):
        launches = int(p.get("launches") or 0)
        total = float(p.get("total_ms") or 0.0)
        row: dict[str, Any] = {"kernel": p["kernel"], "launches": launches, "total_ms": round(total, 3),
                               "ms_per_launch": round(total / launches, 3) if launches else None,
                               "median_ms": p.get("median_ms")}
        k = chosen.get(p["kernel"])
        if k is not None:
            row.update({"captured_launch": k.get("launch"), "evaluations": k.get("evaluations"),
                        "winner": k.get("winner") or "", "speedup": k.get("speedup"), "status": k.get("status") or "",
                        "gpu_ms_after": k.get("gpu_ms_after")})
        else:
            row["status"] = "not among the top kernels"
        out.append(row)
    return out


def evaluation_times(work: Path | None) -> list[dict[str, Any]]:
    """Per MEP under `work` (mep-*/history.sqlite): its finished evaluations, each one's build and run seconds and the
    harness's phases, and their medians and sums; a history that cannot be read is left out."""
    out: list[dict[str, Any]] = []
    for hist in sorted(work.glob("mep-*/history.sqlite")) if work is not None and work.is_dir() else []:
        try:
            with sqlite3.connect(f"file:{hist}?mode=ro", uri=True) as db:
                rows = db.execute("SELECT id, origin, status, result FROM candidates WHERE result IS NOT NULL ORDER BY rowid").fetchall()
        except sqlite3.Error:
            continue
        evals = []
        for cid, origin, status, raw in rows:
            try:
                r = json.loads(raw) if raw else {}
            except ValueError:
                r = {}
            if not isinstance(r, dict):
                continue
            evals.append({"id": cid, "origin": origin, "status": status, "build_s": float(r.get("build_seconds") or 0.0),
                          "run_s": float(r.get("run_seconds") or 0.0),
                          "phases_s": {str(k): float(v) for k, v in (r.get("phase_seconds") or {}).items()},
                          "ref_cache": r.get("ref_cache")})
        if not evals:
            continue
        phases = sorted({k for e in evals for k in e["phases_s"]})
        out.append({"mep": hist.parent.name, "evaluations": evals,
                    "median_build_s": round(statistics.median(e["build_s"] for e in evals), 3),
                    "median_run_s": round(statistics.median(e["run_s"] for e in evals), 3),
                    "total_run_s": round(sum(e["run_s"] for e in evals), 3),
                    "median_phases_s": {k: round(statistics.median(e["phases_s"].get(k, 0.0) for e in evals), 3) for k in phases}})
    return out


def own_check(text: str) -> dict[str, Any]:
    """The application's own verdict from its output after reintegration: the first PASS/FAIL (or ok/FAILED) line."""
    for line in text.splitlines():
        m = _OWN_CHECK.search(line)
        if m:
            return {"verdict": "PASS" if m.group(1) in ("PASS", "ok") else "FAIL", "line": line.strip()[:300]}
    return {"verdict": "none", "line": text.strip().splitlines()[-1][:300] if text.strip() else ""}


def summary(report: dict[str, Any] | None, *, wall_s: float, rc: int | None, deadline_s: float, limit_s: float,
            gpu: str, commit: str, label: str, check_text: str, command: str, date: str,
            evaluations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    report = report or {}
    return {
        "gpu": gpu, "date": date, "commit": commit, "label": label, "command": command,
        "limit_s": limit_s, "deadline_s": deadline_s, "auto_rc": rc, "auto_wall_s": round(wall_s, 3),
        "finished_within_limit": finished(rc, wall_s, deadline_s, limit_s),
        "report_found": bool(report),
        "stages_s": dict(report.get("stages", {})),
        "app_runs": list(report.get("app_runs", [])),
        "app_runs_by_purpose": app_runs_by_purpose(report.get("app_runs", [])),
        "unlisted_compare_s": unlisted_compare(report),
        "kernels": kernels(report),
        "app": report.get("app", {}), "gpu_ms": report.get("gpu", {}), "reintegrated": report.get("reintegrated"),
        "notes": list(report.get("notes", [])),
        "own_check_after": own_check(check_text),
        "evaluation_times": evaluations or [],
    }


def _cell(v: Any) -> str:
    return "" if v is None else str(v).replace("|", "\\|").replace("\n", " ")


def markdown(s: dict[str, Any]) -> str:
    lines = ["# Capture-first `s2s auto` on an application with a long hot kernel", "",
             f"GPU: {s['gpu']}; date {s['date']}; commit {s['commit']}; kernels: {s['label']}", "", f"Command: `{s['command']}`", "",
             f"**Finished within {s['limit_s']:g} s: {s['finished_within_limit']}** (auto's wall time {s['auto_wall_s']:.1f} s, "
             f"exit {s['auto_rc']}, killed at {s['deadline_s']:g} s if not done)", ""]
    if not s["report_found"]:
        lines += ["auto wrote no auto-report.json (killed before its first write, or failed at once).", ""]
    lines += ["## The tool's wall time per stage", "", "| stage | seconds |", "|---|---|"]
    lines += [f"| {k} | {v:.1f} |" for k, v in s["stages_s"].items()]
    lines += ["", "## Application builds and runs by purpose", "", "| purpose | count | each (seconds) | total s |", "|---|---|---|---|"]
    lines += [f"| {p} | {r['count']} | {_cell('; '.join(f'{w[:90]} {x:.1f}' for w, x in zip(r['what'], r['seconds'])))} | "
              f"{r['total_s']:.1f} |" for p, r in s["app_runs_by_purpose"].items()]
    if s["unlisted_compare_s"] is not None:
        lines += ["", f"The compare stage beside its listed builds and runs (the output comparison, a check command): "
                      f"{s['unlisted_compare_s']:.1f} s."]
    lines += ["", "## Kernels", "", "| kernel | launches | ms per launch | captured launch | evaluations | winner | speedup | outcome |",
              "|---|---|---|---|---|---|---|---|"]
    for k in s["kernels"]:
        sp = k.get("speedup")
        lines.append(f"| {k['kernel']} | {k['launches']} | {_cell(k['ms_per_launch'])} | {_cell(k.get('captured_launch'))} | "
                     f"{_cell(k.get('evaluations'))} | {_cell(k.get('winner'))} | {f'{sp:.2f}x' if sp else ''} | "
                     f"{_cell(k['status'])[:200]} |")
    if s.get("evaluation_times"):
        lines += ["", "## Where each kernel's evaluations spent their time (medians, seconds)", "",
                  "| MEP | evaluations | build | harness run | run total | harness phases |", "|---|---|---|---|---|---|"]
        for t in s["evaluation_times"]:
            ph = ", ".join(f"{k} {v:.1f}" for k, v in t["median_phases_s"].items())
            lines.append(f"| {t['mep']} | {len(t['evaluations'])} | {t['median_build_s']:.1f} | {t['median_run_s']:.1f} | "
                         f"{t['total_run_s']:.1f} | {_cell(ph)} |")
    app = s["app"]
    chk = s["own_check_after"]
    lines += ["", "## The application after", "",
              f"- reintegrated: {s['reintegrated']}; output unchanged (auto's check): {app.get('output_unchanged', '-')}"
              + (f"; median wall {app['median_before_s']:.2f} s before, {app['median_after_s']:.2f} s after"
                 if "median_before_s" in app else f"; {app.get('why') or app.get('error') or ''}"),
              f"- GPU time (instrumented runs): {s['gpu_ms'].get('ms_before')} ms before, {s['gpu_ms'].get('ms_after')} ms after",
              f"- the application's own check, built with auto's diff applied: **{chk['verdict']}** (`{chk['line']}`)"]
    if s["notes"]:
        lines += ["", "Notes: " + "; ".join(_cell(n)[:300] for n in s["notes"][:8])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", type=Path, required=True, help="auto-report.json (may be missing)")
    ap.add_argument("--wall-s", type=float, required=True)
    ap.add_argument("--rc", type=int, default=None, help="auto's exit status (124/137: killed by timeout)")
    ap.add_argument("--deadline", type=float, required=True, help="seconds after which auto was killed")
    ap.add_argument("--limit", type=float, default=600.0, help="the limit auto is judged against (default 600)")
    ap.add_argument("--gpu", type=Path, help="nvidia-smi's CSV (gpu.txt)")
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--label", default="in-sample (our own application)")
    ap.add_argument("--check", type=Path, help="the application's output after reintegration")
    ap.add_argument("--command", default="")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--name", default="long_kernel")
    ap.add_argument("--work", type=Path, help="auto's --work directory: each MEP's evaluations, where their time went")
    a = ap.parse_args(argv)
    report = json.loads(a.report.read_text()) if a.report.is_file() else None
    gpu = ""
    if a.gpu is not None and a.gpu.is_file():
        rows = a.gpu.read_text().strip().splitlines()
        gpu = "; ".join(rows[1:]) if len(rows) > 1 else "".join(rows)
    check = a.check.read_text(errors="replace") if a.check is not None and a.check.is_file() else ""
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    s = summary(report, wall_s=a.wall_s, rc=a.rc, deadline_s=a.deadline, limit_s=a.limit, gpu=gpu or "unknown",
                commit=a.commit, label=a.label, check_text=check, command=a.command, date=date,
                evaluations=evaluation_times(a.work))
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"{a.name}.json").write_text(json.dumps(s, indent=1) + "\n")
    md = markdown(s)
    (a.out / f"{a.name}.md").write_text(md)
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
