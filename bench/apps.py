"""The application benchmark: capture-first `s2s auto` over the catalogue's applications (bench/apps/), judged by
their GPU time, with the held-out split kept apart.

    python3 bench/apps.py --apps-dir DIR --out OUT [--label held-out|dev] [--apps a,b] [--deadline S]
                          [--parallel N] [--top K] [--max-evals N] [--runs N] [--max-run S] [--check-only]
    python3 bench/apps.py --summarize OUT [OUT ...] --into DIR      merges runs into one summary

DIR holds the applications laid out by bench/apps/layout.py (DIR/NAME/). Two phases, both within --deadline:

1. check: every chosen application is prepared, built and run once as the catalogue says, in a copy, N at a time
   (OUT/check.json: exit status, build and run seconds, the output's last lines). Run times are read while other
   applications build and run beside them.
2. auto: each application that ran, and whose run took at most --max-run seconds, goes through
   `s2s auto APP --build-cmd B --run-cmd R [--check-cmd C] --top K --max-evals N --runs R` in its own process group,
   N at a time, killed at the deadline (outcome `timeout`). Timings and the instrumented runs that measure GPU time
   take the device lock, so they run alone on the GPU; builds and checks run beside them.

OUT/apps_summary.json and OUT/apps_summary.md: per application its label, status, the tool's seconds, the GPU time
before and after (the sum of measured kernel times of instrumented runs, before and after reintegration), and per
kernel its share of GPU time, speedup (1.0 without a win) and outcome class (win, no-pass-applies, no-win,
wrong-output, build-failure, capture-failure, tool-error, timeout); per label the geomean over every attempted kernel
(bench/geomean.py), the GPU-time-weighted speedup, the geomean of the applications' GPU-time speedups, the outcome
counts and the most common refusal reasons.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "bench" / "apps"))
from auto_apps import gpu_name  # noqa: E402
from geomean import geomean  # noqa: E402
from layout import load, select  # noqa: E402
from split import label as label_of  # noqa: E402

OUTCOMES = ("win", "no-pass-applies", "no-win", "wrong-output", "build-failure", "capture-failure", "tool-error", "timeout")
LABELS = ("held-out split", "development corpus")
SHORT = {"held-out split": "held-out", "development corpus": "dev"}  # an application's label in apps_summary.json


def _shell(cmd: str, cwd: Path, timeout: float, log: Path, env: dict[str, str]) -> tuple[int, float]:
    """`cmd` in its own process group, killed whole on timeout (rc 124); output appended to `log`."""
    t0 = time.monotonic()
    with open(log, "ab") as fh:
        fh.write(f"\n$ {cmd}\n".encode())
        fh.flush()
        proc = subprocess.Popen(cmd, shell=True, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=max(1.0, timeout))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = 124
    return rc, time.monotonic() - t0


def _tail(path: Path, n: int = 4) -> list[str]:
    try:
        lines = path.read_bytes()[-20000:].decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    return [ln[:300] for ln in lines if ln.strip()][-n:]


def gpu_count() -> int:
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 1
    return max(1, sum(1 for ln in listed.splitlines() if ln.startswith("GPU ")))


_SLOTS: dict[int, int] = {}  # a worker thread -> its GPU
_SLOT_LOCK = threading.Lock()


def _gpu_of_thread(gpus: int) -> int:
    """Each worker thread keeps one GPU (round robin over the machine's): an application's runs and timings stay on it."""
    me = threading.get_ident()
    with _SLOT_LOCK:
        if me not in _SLOTS:
            _SLOTS[me] = len(_SLOTS) % max(1, gpus)
        return _SLOTS[me]


def _env(out: Path, gpus: int = 1) -> dict[str, str]:
    env = dict(os.environ, S2S_REPO=str(REPO), S2S_CACHE_DIR=str(out / "cache"))
    if gpus > 1:  # one device lock a GPU: timings on different GPUs run at once, on one GPU one at a time
        g = _gpu_of_thread(gpus)
        env["CUDA_VISIBLE_DEVICES"] = str(g)
        env["S2S_DEVICE_LOCK"] = f"{env.get('S2S_DEVICE_LOCK', '/tmp/s2s-apps-device.lock')}.gpu{g}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def check_app(app: dict[str, Any], apps_dir: Path, out: Path, until: float) -> dict[str, Any]:
    """Prepare, build and run `app` once in a copy of its laid-out tree."""
    work = out / "check" / app["name"]
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(apps_dir / app["name"], work, symlinks=True)
    log = out / "logs" / f"{app['name']}.check.log"
    env = _env(out)
    row: dict[str, Any] = {"name": app["name"], "label": app["label"]}
    steps = [("prepare", app.get("prepare", "")), ("build", app["build"]), ("run", app["run"])]
    for what, cmd in steps:
        if not cmd:
            continue
        left = until - time.monotonic()
        if left < 5:
            row.update(status="not-checked", why="deadline")
            return row
        rc, secs = _shell(cmd, work, min(left, 120.0 if what == "run" else 300.0), log, env)
        row[f"{what}_s"] = round(secs, 2)
        if rc != 0:
            row.update(status=f"{what}-failed", rc=rc, tail=_tail(log))
            return row
    row.update(status="ok", tail=_tail(log, 2))
    shutil.rmtree(work, ignore_errors=True)
    return row


def auto_app(app: dict[str, Any], apps_dir: Path, out: Path, until: float, args: argparse.Namespace,
             procs: dict[str, subprocess.Popen[bytes]]) -> dict[str, Any]:
    """`s2s auto` on one application; the report it wrote (as it went) read back."""
    name = app["name"]
    tree = out / "trees" / name  # auto reads the tree only; a copy keeps the laid-out one clean for other calls
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(apps_dir / name, tree, symlinks=True)
    env = _env(out, args.gpus)
    log = out / "logs" / f"{name}.auto.log"
    if app.get("prepare"):
        _shell(app["prepare"], tree, 300, log, env)
    work = out / "work" / name
    shutil.rmtree(work, ignore_errors=True)
    work.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "s2s", "auto", str(tree), "--build-cmd", app["build"], "--run-cmd", app["run"],
           "--top", str(args.top), "--max-evals", str(args.max_evals), "--runs", str(args.runs), "--work", str(work),
           "--diff", str(out / "work" / f"{name}.diff"), "--cmd-timeout", str(args.cmd_timeout), "--no-patterns", "--no-profile",
           "--jobs", str(args.jobs)] + (["--time-budget", str(args.time_budget)] if args.time_budget else []) \
        + (["--max-bytes", args.max_bytes] if args.max_bytes else [])
    if app.get("check"):
        cmd += ["--check-cmd", app["check"]]
    t0 = time.monotonic()
    with open(log, "ab") as fh:
        fh.write(("\n$ " + " ".join(cmd) + "\n").encode())
        fh.flush()
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        procs[name] = proc
        try:
            rc = proc.wait(timeout=max(1.0, until - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = 124
        finally:
            procs.pop(name, None)
    seconds = time.monotonic() - t0
    report: dict[str, Any] = {}
    try:
        report = json.loads((work / "auto-report.json").read_text())
    except (OSError, ValueError):
        pass
    return summarize_app(app, rc, seconds, report, _tail(log, 6))


def _kernel_outcome(row: dict[str, Any]) -> str:
    status = str(row.get("status", ""))
    verdicts = row.get("verdicts") or {}
    if status.startswith("reintegrated"):
        return "win"
    if status.startswith("not kept"):
        return "wrong-output"
    if status.startswith("capture failed"):
        return "capture-failure"
    if status.startswith("optimize failed"):
        return "build-failure" if re.search(r"compile|nvcc|build", status) and "reference" in status else "tool-error"
    if status.startswith("reintegration failed"):
        return "tool-error"
    if status.startswith("not reintegrated"):
        tried = {v: n for v, n in verdicts.items() if v not in {"duplicate"}}
        if row.get("evaluations", 1) == 0 and any("time budget spent" in str(n) for n in row.get("notes") or []):
            return "timeout"  # no candidate started: --time-budget was spent before (not a kernel no pass applies to)
        if not tried or row.get("evaluations", 1) == 0:
            return "no-pass-applies"
        if set(tried) == {"wrong-output"}:
            return "wrong-output"
        if set(tried) <= {"compile-failed"}:
            return "build-failure"
        return "no-win"
    return "timeout" if not status else "tool-error"


def _app_failure(rc: int, tail: list[str]) -> str:
    text = " ".join(tail)
    if rc == 124:
        return "timeout"
    if "the build command" in text:
        return "build-failure"
    if re.search(r"the run command|launched none|no CUDA <<<>>>|no kernel", text):
        return "capture-failure"
    return "tool-error"


def _no_win_unless_ran(status: str, kernels: list[dict[str, Any]]) -> None:
    """A winner the application never ran with (its auto run was stopped or failed) is no win: 1.00x, the app's outcome."""
    if status == "ok":
        return
    for k in kernels:
        if k["outcome"] == "win":
            k.update(outcome=status if status in OUTCOMES else "tool-error", speedup=1.0)


def summarize_app(app: dict[str, Any], rc: int, seconds: float, report: dict[str, Any], tail: list[str]) -> dict[str, Any]:
    gpu = report.get("gpu") or {}
    before = gpu.get("ms_before")
    if before is None and report.get("profile"):
        before = sum(float(k.get("total_ms") or 0) for k in report["profile"])
    after = gpu.get("ms_after")
    kernels: list[dict[str, Any]] = []
    for row in report.get("kernels", []):
        outcome = "timeout" if rc == 124 and not row.get("status") else _kernel_outcome(row)
        sp = float(row.get("speedup") or 1.0) if outcome == "win" else 1.0
        kernels.append({"kernel": row.get("kernel"), "gpu_ms": row.get("gpu_ms"), "gpu_ms_after": row.get("gpu_ms_after"),
                        "launches": row.get("launches"), "speedup": round(sp, 4), "outcome": outcome,
                        "evaluations": row.get("evaluations"), "winner": row.get("winner_origin") or "",
                        "status": str(row.get("status", ""))[:400], "refusals": row.get("refusals") or {},
                        "replays_capture": row.get("replays_capture")})  # False: generated data (over --max-bytes)
    status = "ok" if rc in (0, 1) and report.get("stages", {}).get("total") is not None else (
        "timeout" if rc == 124 else _app_failure(rc, tail))
    _no_win_unless_ran(status, kernels)
    if not kernels:  # nothing was chosen: the application still counts once, at 1.00x, with what stopped it
        kernels.append({"kernel": "(none profiled)", "gpu_ms": 0.0, "speedup": 1.0, "outcome": status if status in OUTCOMES
                        else "tool-error", "status": " | ".join(tail)[-400:], "refusals": {}})
    if after is None or status != "ok":
        after = before  # nothing was kept: the application's GPU time is what it was
    app_out = report.get("app") or {}
    return {"name": app["name"], "label": SHORT.get(app["label"], app["label"]), "suite": app.get("suite", ""), "commit": app.get("commit", ""),
            "status": status, "rc": rc, "tool_seconds": round(seconds, 2),
            "gpu_ms_before": before, "gpu_ms_after": after,
            "gpu_time_speedup": round(before / after, 4) if before and after else 1.0,
            "sequence_wins": len(_reintegrated_loops(report.get("sequence_results", []))),
            "sequence_results": [{k: q.get(k) for k in ("loop", "form", "speedup", "status")}
                                 for q in report.get("sequence_results", [])],
            "kernels": kernels,
            "sequences": [{k: q.get(k) for k in ("function", "kernels", "launches", "gpu_ms", "mean_launch_us", "launch_bound")}
                          for q in report.get("sequences", [])[:4]], "profile_kernels": len(report.get("profile", [])),
            "wall_before_s": app_out.get("median_before_s"), "wall_after_s": app_out.get("median_after_s"),
            "output_unchanged": app_out.get("output_unchanged"), "check": app_out.get("how") or app_out.get("why") or "",
            "stages": report.get("stages", {}), "app_runs": report.get("app_runs", []),
            "notes": report.get("notes", [])[:6], "tail": tail if status != "ok" else []}


def _reintegrated_loops(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sequence rows (auto-report's `sequence_results`) whose loop auto made a graph or persistent form of."""
    return [q for q in rows if str(q.get("status", "")).startswith("reintegrated")]


def _reason_key(pipeline: str, why: str) -> str:
    """The refusal, its numbers generalized; it names the refusing pass itself when it starts with 'pass: '."""
    text = re.sub(r"[0-9]+", "N", why)[:160]
    return text if re.match(r"[a-z0-9-]+(\{[^}]*\})?: ", text) else f"{pipeline.split(',')[-1].split('{')[0]}: {text}"


def totals(apps: list[dict[str, Any]]) -> dict[str, Any]:
    kernels = [k for a in apps for k in a["kernels"]]
    weighted_before = sum(float(k.get("gpu_ms") or 0) for k in kernels)
    weighted_after = sum(float(k.get("gpu_ms") or 0) / max(float(k["speedup"]), 1e-9) for k in kernels)
    counts = {o: sum(k["outcome"] == o for k in kernels) for o in OUTCOMES}
    reasons: dict[str, int] = {}
    for k in kernels:  # how many kernels each reason stopped a pass on
        for key in {_reason_key(pipe, str(why)) for pipe, why in (k.get("refusals") or {}).items()}:
            reasons[key] = reasons.get(key, 0) + 1
    gb = sum(float(a["gpu_ms_before"] or 0) for a in apps)
    ga = sum(float(a["gpu_ms_after"] or 0) for a in apps)
    return {"applications": len(apps), "kernels_attempted": len(kernels),
            "kernel_geomean": round(geomean(k["speedup"] for k in kernels), 4),
            "gpu_time_weighted_speedup": round(weighted_before / weighted_after, 4) if weighted_after else 1.0,
            "app_gpu_time_speedup_geomean": round(geomean(a["gpu_time_speedup"] for a in apps), 4),
            "app_gpu_ms_before": round(gb, 3), "app_gpu_ms_after": round(ga, 3),
            "sequence_wins": sum(int(a.get("sequence_wins") or 0) for a in apps),
            "outcomes": counts, "statuses": {s: sum(a["status"] == s for a in apps) for s in sorted({a["status"] for a in apps})},
            "top_refusals": sorted(reasons.items(), key=lambda kv: -kv[1])[:25]}


def write_summary(into: Path, apps: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    # an application that failed the catalogue check (it does not build or run as catalogued, or runs too long) is
    # listed, not counted: the tool never attempted it
    for a in apps:  # summaries written before the short labels
        a["label"] = SHORT.get(a["label"], a["label"])
    by = {lab: [a for a in apps if a["label"] == SHORT[lab] and not a["status"].startswith("catalogue-check")] for lab in LABELS}
    summary = {**meta, "labels": {lab: totals(v) for lab, v in by.items() if v}, "apps": apps}
    into.mkdir(parents=True, exist_ok=True)
    (into / "apps_summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    lines = [f"# Application benchmark: {meta.get('device', '?')}, {meta.get('date', '?')}, commit {meta.get('commit', '?')}",
             "", f"Settings: {meta.get('settings', '')}", "",
             "| label | apps | kernels attempted | kernel geomean | GPU-time-weighted | app GPU-time geomean | app GPU ms before -> after | "
             + " | ".join(OUTCOMES) + " |", "|---" * (7 + len(OUTCOMES)) + "|"]
    for lab, t in summary["labels"].items():
        lines.append(f"| {lab} | {t['applications']} | {t['kernels_attempted']} | {t['kernel_geomean']:.2f}x | "
                     f"{t['gpu_time_weighted_speedup']:.2f}x | {t['app_gpu_time_speedup_geomean']:.2f}x | "
                     f"{t['app_gpu_ms_before']:.1f} -> {t['app_gpu_ms_after']:.1f} | "
                     + " | ".join(str(t["outcomes"][o]) for o in OUTCOMES) + " |")
    for lab, t in summary["labels"].items():
        lines += ["", f"## {lab}: most common refusal reasons (pass: reason, kernels)", ""]
        lines += [f"- {k} ({n})" for k, n in t["top_refusals"][:12]]
    lines += ["", "## Per application", "",
              "| app | label | status | tool s | GPU ms before | after | app GPU speedup | kernels (share, speedup, outcome) |",
              "|---|---|---|---|---|---|---|---|"]
    for a in sorted(apps, key=lambda a: (a["label"], a["name"])):
        total = float(a["gpu_ms_before"] or 0) or 1.0
        ks = "; ".join(f"{k['kernel']} ({100 * float(k.get('gpu_ms') or 0) / total:.0f}%, {k['speedup']:.2f}x, {k['outcome']})"
                       for k in a["kernels"])
        ks += "".join(f"; loop {q['loop']} ({q['form']}, {float(q['speedup']):.2f}x on its replay)"
                      for q in _reintegrated_loops(a.get("sequence_results", [])))
        gb, ga = a["gpu_ms_before"], a["gpu_ms_after"]
        lines.append(f"| {a['name']} | {a['label']} | {a['status']} | "
                     f"{a['tool_seconds']:.0f} | {gb if gb is None else f'{gb:.3f}'} | {ga if ga is None else f'{ga:.3f}'} | "
                     f"{a['gpu_time_speedup']:.2f}x | {ks} |")
    (into / "apps_summary.md").write_text("\n".join(lines) + "\n")
    return summary


def run(args: argparse.Namespace) -> int:
    t_begin = time.monotonic()
    until = t_begin + args.deadline
    args.gpus = args.gpus or gpu_count()
    out: Path = args.out
    (out / "logs").mkdir(parents=True, exist_ok=True)
    chosen = select(load(args.catalog), args.apps, args.label)
    for a in chosen:  # the label is the rule's, whatever the catalogue file says
        a["label"] = label_of(a["name"])
    missing = [a["name"] for a in chosen if not (args.apps_dir / a["name"]).is_dir()]
    if missing:
        print(f"not laid out in {args.apps_dir}: {', '.join(missing)}", file=sys.stderr)
        return 2
    check_until = until if args.check_only else t_begin + args.check_deadline
    if args.checked:  # the catalogue check was made already (the catalogue records each application's run seconds)
        checked = [{"name": a["name"], "label": a["label"], "status": "ok", "run_s": a.get("run_seconds", 0.0)} for a in chosen]
    else:
        with ThreadPoolExecutor(args.parallel) as pool:
            checked = list(pool.map(lambda a: check_app(a, args.apps_dir, out, check_until), chosen))
    (out / "check.json").write_text(json.dumps(checked, indent=1) + "\n")
    ok = sum(c["status"] == "ok" for c in checked)
    print(f"check: {ok} of {len(checked)} built and ran ({time.monotonic() - t_begin:.0f} s)", flush=True)
    if args.check_only:
        return 0
    by_name = {c["name"]: c for c in checked}
    runnable = [a for a in chosen if by_name[a["name"]]["status"] == "ok" and by_name[a["name"]].get("run_s", 0) <= args.max_run]
    # the shortest runs first: the most applications finish within the deadline; one that cannot start or finish
    # counts as a timeout at 1.00x
    runnable.sort(key=lambda a: by_name[a["name"]].get("run_s", 0))
    procs: dict[str, subprocess.Popen[bytes]] = {}
    results: list[dict[str, Any]] = []
    lock = threading.Lock()
    meta = {"date": datetime.date.today().isoformat(), "commit": os.environ.get("S2S_COMMIT", "unknown"), "device": gpu_name(),
            "settings": f"s2s auto --top {args.top} --max-evals {args.max_evals} --runs {args.runs}"
                        + (f" --time-budget {args.time_budget:g}" if args.time_budget else "")
                        + (f" --max-bytes {args.max_bytes}" if args.max_bytes else "")
                        + f", {args.parallel} applications at a time on {args.gpus} GPU(s), at most {args.per_app:g} s an application, "
                        f"deadline {args.deadline:g} s" + (f", applications whose catalogue run took over {args.max_run:g} s not run" if args.max_run < 1e8 else ""),
            "catalog_commit": {a["name"]: a["commit"] for a in chosen}}

    def one(app: dict[str, Any]) -> None:
        if until - time.monotonic() < 30:
            res = summarize_app(app, 124, 0.0, {}, ["not started before the deadline"])
            res["status"] = "timeout"
            res["kernels"][0]["status"] = "not started before the deadline"
        else:
            res = auto_app(app, args.apps_dir, out, min(until, time.monotonic() + args.per_app), args, procs)
        with lock:
            results.append(res)
            write_summary(out, results + skipped, meta)
        print(f"{app['name']}: {res['status']} {res['tool_seconds']:.0f} s, GPU {res['gpu_time_speedup']:.2f}x, "
              + ", ".join(f"{k['kernel']} {k['speedup']:.2f}x {k['outcome']}" for k in res["kernels"]), flush=True)

    skipped = []
    for a in chosen:
        c = by_name[a["name"]]
        if a not in runnable:
            why = c["status"] if c["status"] != "ok" else f"run took {c.get('run_s')} s (over {args.max_run:g})"
            res = summarize_app(a, -1, 0.0, {}, [why, *c.get("tail", [])[-2:]])
            res["status"] = "catalogue-check: " + why
            res["kernels"][0]["outcome"] = "build-failure" if c["status"] == "build-failed" else "capture-failure"
            skipped.append(res)
    try:
        with ThreadPoolExecutor(args.parallel) as pool:
            list(pool.map(one, runnable))
    finally:
        for p in list(procs.values()):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    summary = write_summary(out, results + skipped, meta)
    for lab, t in summary["labels"].items():
        print(f"{lab}: {t['applications']} apps, {t['kernels_attempted']} kernels, geomean {t['kernel_geomean']:.2f}x, "
              f"GPU-time-weighted {t['gpu_time_weighted_speedup']:.2f}x, app GPU time {t['app_gpu_time_speedup_geomean']:.2f}x, "
              f"outcomes {t['outcomes']}")
    return 0


def _reclassify(app: dict[str, Any], report_path: Path) -> None:
    """The kernels' outcomes again from the application's auto-report.json where the part keeps it (a part summarized
    before a rule of _kernel_outcome changed); a winner's speedup stays, a kernel no longer a win counts 1.00x."""
    try:
        rows = {r.get("kernel"): r for r in json.loads(report_path.read_text()).get("kernels", [])}
    except (OSError, ValueError):
        return
    for k in app["kernels"]:
        row = rows.get(k["kernel"])
        if row is not None and row.get("status"):
            k["outcome"] = _kernel_outcome(row)
            if k["outcome"] != "win":
                k["speedup"] = 1.0


def merge(parts: list[Path], into: Path) -> int:
    apps: dict[str, dict[str, Any]] = {}
    meta: dict[str, Any] = {}
    settings = []
    for p in parts:
        s = json.loads((p / "apps_summary.json").read_text())
        meta = meta or {k: v for k, v in s.items() if k not in {"apps", "labels"}}
        settings.append(f"{p.name} (commit {s.get('commit')}): {s.get('settings', '')}")
        for a in s["apps"]:
            a.setdefault("run", p.name)
            _reclassify(a, p / "work" / a["name"] / "auto-report.json")
            a["commit_s2s"] = s.get("commit")
            _no_win_unless_ran(a["status"], a["kernels"])  # parts summarized before the rule was applied
            apps[a["name"]] = a  # a later part's result for the same application replaces the earlier
    meta["settings"] = "; ".join(settings)
    meta["parts"] = [str(p) for p in parts]
    write_summary(into, list(apps.values()), meta)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--apps-dir", type=Path)
    ap.add_argument("--catalog", type=Path, default=REPO / "bench" / "apps" / "catalog.toml")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--label", choices=["held-out", "dev"])
    ap.add_argument("--apps")
    ap.add_argument("--deadline", type=float, default=540)
    ap.add_argument("--check-deadline", type=float, default=200, help="seconds for the check phase")
    ap.add_argument("--parallel", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--jobs", type=int, default=2, help="parallel builds within one application's optimization")
    ap.add_argument("--top", type=int, default=2)
    ap.add_argument("--max-evals", type=int, default=6)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--max-run", type=float, default=1e9, help="seconds: a longer application run is not optimized")
    ap.add_argument("--cmd-timeout", type=float, default=240.0)
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--gpus", type=int, help="GPUs to spread the applications over (default: all the machine has)")
    ap.add_argument("--checked", action="store_true", help="skip the check: the catalogue's entries were checked")
    ap.add_argument("--per-app", type=float, default=330.0, help="seconds one application's s2s auto may take")
    ap.add_argument("--max-bytes", help="s2s auto --max-bytes (a captured launch's data; applications run side by side "
                                        "share one disk, so keep it below the disk's free space / (parallel x 3))")
    ap.add_argument("--time-budget", type=float, help="s2s auto --time-budget (seconds from auto's start, over every kernel, the top first)")
    ap.add_argument("--summarize", type=Path, nargs="+")
    ap.add_argument("--into", type=Path)
    args = ap.parse_args(argv)
    if args.summarize:
        return merge(args.summarize, args.into or args.summarize[-1])
    if not args.apps_dir or not args.out:
        ap.error("--apps-dir and --out are needed")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
