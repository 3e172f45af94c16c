"""The sample figures the honest way (issue 15): each of the 13 sample MEPs (bench/meps) held to the application's own
data where it can be captured, optimized with the built-in proposer, its winner re-timed against the original's noise
band; refused, failed, not run and no win count 1.00x. bench/gpu_samples.sh runs the three steps in one device call.

    python bench/gpu_samples.py capture --meps bench/meps --work DIR [--dry] [--timeout 90] [--deadline S] [--parallel 8]
    python bench/gpu_samples.py summarize --work DIR --optimized OUT/gpu_samples_optimize.json --out OUT

capture: copies every MEP to DIR/meps/NAME and attaches a real run's data to the copy (`s2s capture SAMPLE --kernel
FILE:NAME --build-cmd 'make ...' --run-cmd ./APP --into DIR/meps/NAME`), the application built with the MEP's own sizes
(its -D flags as make variables) so the captured buffers have the MEP's counts; several at once, each under a timeout.
Each captured copy is replayed (`s2s run --no-time`: the reference must reproduce the application's outputs); a copy
whose capture or replay failed is put back as committed and is optimized on generated inputs.
DIR/captures.json says per MEP what was run and what came of it. --dry runs each capture with `true` as the run command:
everything up to the instrumented application's build happens (extraction, the same-kernel check, instrumentation,
nvcc), and a capture that gets as far as "never launched" counts as built.

summarize: OUT/gpu_samples.{json,md}: per kernel the re-timed winner's speedup (1.00x: no win, failed, refused on the
captured data, not run), whether it was held to captured data, evaluations (to best); geomeans (bench/geomean.py) over
the CUDA kernels, the HIP kernels and all.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import tomllib
from geomean import geomean, summary
from provenance import commit, write_result

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_KIND = "in-sample: the sample kernels the built-in passes were developed on"
APPS = {"heat3d_cuda": "./heat3d", "hip_particles": "./hip_particles"}
# kernels launched in the applications' time loops: a steady-state launch (the third) rather than the first
STEADY = {"stencil7": 3, "axpby_t": 3, "particles_step": 3}
# hip_particles' diagnostics run after its NSTEPS loop of compute_forces_naive (O(NBODY^2)); at the MEPs' NBODY=4194304
# each step takes about 90 s on the H200 (run 4: 5.65 ms at 32768, x 128^2), so they are captured with no step
NO_STEPS = {"deposit_density", "speed_histogram", "kinetic_energy"}
SKIP = {"integrate_bodies": "not attempted: its first launch follows a compute_forces_naive step at NBODY=4194304 "
                            "(O(NBODY^2), about 90 s on the H200)"}
RUN4 = ROOT / "bench" / "results" / "gpu-run4" / "gpu_optimize.json"


def plan(mep: Path, root: Path = ROOT) -> dict[str, Any]:
    """The capture of one sample MEP: the application, --kernel, build and run commands, the launch recorded."""
    m = tomllib.loads((mep / "mep.toml").read_text())
    sample = mep.name.split(".", 1)[0].split("-", 1)[1]
    short = str(m["kernel"]).split("::")[-1]
    sizes = {}
    for f in m.get("flags", []):
        if f.startswith("-D") and "=" in f:
            name, value = f[2:].split("=", 1)
            sizes[name] = value
    if sample == "hip_particles":
        sizes["HIP_SHIM"] = str(root / "templates" / "hip_shim")  # the copy's ../../templates is not there
        if short in NO_STEPS:
            sizes["NSTEPS"] = "0"
    launch = STEADY.get(short, 1)
    build = "make -s -j4 " + " ".join(f"{k}={v}" for k, v in sizes.items())
    return {"mep": mep.name, "sample": sample, "backend": m.get("backend", ""), "kernel": f"{m['origin']['file']}:{short}",
            "build": build, "run": APPS[sample], "launch": launch, "skip": SKIP.get(short, "")}


def capture_argv(p: dict[str, Any], into: Path, timeout: float, dry: bool, root: Path = ROOT) -> list[str]:
    return [sys.executable, "-m", "s2s", "capture", str(root / "samples" / p["sample"]), "--kernel", p["kernel"],
            "--build-cmd", p["build"], "--run-cmd", "true" if dry else p["run"], "--launch", str(p["launch"]),
            "--into", str(into), "--timeout", str(int(timeout))]


def _run(argv: list[str], timeout: float) -> tuple[int, str]:
    """argv in its own session, killed whole past `timeout` (s2s's own build/run timeouts come first)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            cwd=ROOT)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)  # s2s kills the build or run it started (their own sessions), then exits
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        return 124, (out or "") + f"\nkilled after {timeout:.0f} s (the capture step's deadline)"


def _json_line(out: str) -> dict[str, Any]:
    """The last line of `out` that is a JSON object (`s2s run --json`), else {}."""
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            try:
                got = json.loads(line)
            except ValueError:
                continue
            return got if isinstance(got, dict) else {}
    return {}


def fresh_copy(src: Path, dest: Path) -> None:
    """`dest` as the committed MEP `src`: no build, variants, history or captured data."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("build", "variants", "history.sqlite*", "capture", "capture.log"))


def capture_one(p: dict[str, Any], src: Path, into: Path, timeout: float, dry: bool, until: float) -> dict[str, Any]:
    """One capture into the copy `into` of `src`, then its replay (`s2s run --no-time`: the reference must reproduce the
    application's outputs); killed at `until` (time.time()) whatever s2s's own build and run timeouts say. A capture
    that failed or does not replay leaves `into` as `src` (optimized on generated inputs)."""
    row = dict(p)
    if p["skip"]:
        row.update(status="skipped", why=p["skip"])
        return row
    argv = capture_argv(p, into, timeout, dry)
    t0 = time.time()
    if until - t0 < 5:
        row.update(status="failed", why="not started: the capture step's deadline")
        return row
    rc, out = _run(argv, until - t0)
    row.update(argv=argv[1:], rc=rc, seconds=round(time.time() - t0, 1), output=out.strip()[-800:])
    if dry and rc == 2 and "was never launched by the run command" in out:
        row.update(status="built", why="dry: the instrumented application built; not run")
        return row
    if rc == 0 and not dry:
        rc, out = _run([sys.executable, "-m", "s2s", "run", str(into), "--no-time", "--json"], max(5.0, until - time.time()))
        msgs = _json_line(out).get("messages", [])
        row.update(replay_rc=rc, replay_messages=msgs[:6], seconds=round(time.time() - t0, 1))
        shutil.rmtree(into / "build", ignore_errors=True)
        if rc == 0:
            row.update(status="captured", why="")
            return row
        tail = next((ln for ln in reversed(out.strip().splitlines()) if ln.strip()), "")
        row.update(replay_output=out.strip()[-800:], status="failed",
                   why=f"captured, but the replay failed (s2s run exit {rc}): {(' '.join(msgs) or tail)[:300]}")
    else:
        last = next((ln for ln in reversed(out.strip().splitlines()) if ln.strip()), "")
        row.update(status="failed", why=last[:300] or f"exit {rc}")
    fresh_copy(src, into)
    return row


def cmd_capture(args: argparse.Namespace) -> int:
    work = Path(args.work)
    meps_dir = work / "meps"
    if meps_dir.exists():
        shutil.rmtree(meps_dir)
    meps_dir.mkdir(parents=True)
    srcs = sorted(p for p in Path(args.meps).iterdir() if (p / "mep.toml").is_file())
    if args.only:
        srcs = [p for p in srcs if p.name in args.only.split(",")]
    for src in srcs:
        fresh_copy(src, meps_dir / src.name)
    t0 = time.time()
    until = t0 + args.deadline
    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        rows = list(pool.map(lambda src: capture_one(plan(src), src, meps_dir / src.name, args.timeout, args.dry, until), srcs))
    doc = {"dry": args.dry, "seconds": round(time.time() - t0, 1), "captures": rows}
    (work / "captures.json").write_text(json.dumps(doc, indent=1) + "\n")
    for r in rows:
        print(f"{r['mep']}: {r['status']}" + (f" ({r.get('seconds')} s)" if "seconds" in r else "")
              + (f" - {r['why']}" if r.get("why") else ""), flush=True)
    return 0


def _captured_cell(cap: dict[str, Any] | None, opt: dict[str, Any]) -> str:
    held = opt.get("captured")
    if held:
        n = held.get("refused_candidates", 0)
        return f"yes (launch {', '.join(map(str, held.get('sets') or []))}; {n} candidate(s) refused on it)"
    if cap is None:
        return "no (not attempted)"
    if cap.get("status") == "captured":
        return "captured, not used (see status)"
    return f"no: {cap.get('status')}: {cap.get('why', '')}".replace("|", "/")


def summarize(captures: dict[str, Any], optimized: dict[str, Any], meps: list[str]) -> dict[str, Any]:
    caps = {c["mep"]: c for c in captures.get("captures", [])}
    opts = {r.get("mep"): r for r in optimized.get("kernels", [])}
    run4 = {}
    if RUN4.is_file():
        run4 = {r["mep"]: r.get("speedup") for r in json.loads(RUN4.read_text()).get("kernels", [])}
    rows = []
    for name in meps:
        o = opts.get(name) or {"status": "not-run: no result from the optimize step"}
        win = o.get("winner") or {}
        counted = float(o["speedup"]) if o.get("status") == "ok" and isinstance(o.get("speedup"), (int, float)) else 1.0
        rows.append({"mep": name, "backend": "hip" if name.split("-", 1)[-1].startswith("hip_particles.") else "cuda",
                     "speedup_counted": round(counted, 4), "status": o.get("status"), "why": win.get("why", ""),
                     "noise_high": (o.get("noise_band") or {}).get("high"), "retimed": win.get("retimed"),
                     "held_to_captured_data": bool(o.get("captured")), "captured": o.get("captured"),
                     "capture": {k: v for k, v in (caps.get(name) or {}).items() if k in ("status", "why", "seconds", "launch", "rc")},
                     "evaluations": o.get("evaluations"), "evals_to_best": o.get("evals_to_best"), "stopped": o.get("stopped"),
                     "pipeline": o.get("pipeline", ""), "original_us": o.get("original_us"), "best_us": o.get("best_us"),
                     "run4_single_measurement": run4.get(name), "captured_cell": _captured_cell(caps.get(name), o)})
    geo = {k: round(geomean([r["speedup_counted"] for r in rows if k == "all" or r["backend"] == k]), 3)
           for k in ("cuda", "hip", "all")}
    counts = {k: sum(1 for r in rows if k == "all" or r["backend"] == k) for k in ("cuda", "hip", "all")}
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit(), "device": optimized.get("device", ""),
            "max_evals": optimized.get("max_evals"), "sample_kind": SAMPLE_KIND, "geomean": geo, "counts": counts,
            "summary": summary([r["speedup_counted"] for r in rows], "in-sample"),
            "held_to_captured_data": sum(1 for r in rows if r["held_to_captured_data"]), "kernels": rows}


def markdown(doc: dict[str, Any]) -> str:
    g, n = doc["geomean"], doc["counts"]
    lines = [f"# Sample kernels, the honest way, on {doc['device'] or '?'} ({doc['date']}, commit {doc['commit']})", "",
             f"Geometric-mean speedup ({doc['sample_kind']}): **{g['cuda']:.2f}x over the {n['cuda']} CUDA kernels**, "
             f"{g['hip']:.2f}x over the {n['hip']} HIP kernels (built by nvcc through the HIP-to-CUDA header), "
             f"{g['all']:.2f}x over all {n['all']} (bench/geomean.py). At most {doc['max_evals'] or '-'} evaluations each. "
             "A speedup is the declared winner's re-timing (a fresh alternation with the original, above the original's "
             "noise band against itself); no win, failed, refused on the captured data and not run count 1.00x. "
             f"{doc['held_to_captured_data']} of {n['all']} kernels were held to the application's own captured data "
             "(every candidate checked on it first); the others were optimized on generated inputs only.", "",
             "| kernel | speedup (counted) | original -> winner µs | noise band up to | held to captured data | "
             "evals (to best) | stopped | pipeline | status | run 4 (single measurement) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["kernels"]:
        r4 = r.get("run4_single_measurement")
        us = (f"{r['original_us']:.2f} -> {r['best_us']:.2f}" if isinstance(r.get("original_us"), (int, float))
              and isinstance(r.get("best_us"), (int, float)) else "-")
        noise = f"{r['noise_high']:.4f}x" if isinstance(r.get("noise_high"), (int, float)) else "-"
        lines.append(f"| {r['mep']} | {r['speedup_counted']:.2f}x | {us} | {noise} | {r['captured_cell']} | {r.get('evaluations') or '-'} "
                     f"({r.get('evals_to_best') if r.get('evals_to_best') is not None else '-'}) | {r.get('stopped') or '-'} | "
                     f"`{r.get('pipeline') or ''}` | {str(r.get('status')).replace('|', '/')[:160]} | "
                     f"{f'{r4:.2f}x' if isinstance(r4, (int, float)) else '-'} |")
    lines += ["", "Why each winner was declared or not (s2s.optimize.winner):", ""]
    lines += [f"- {r['mep']}: {r['why']}" for r in doc["kernels"] if r.get("why")]
    return "\n".join(lines)


def cmd_summarize(args: argparse.Namespace) -> int:
    work = Path(args.work)
    cap_path = work / "captures.json"
    captures = json.loads(cap_path.read_text()) if cap_path.is_file() else {}
    opt_path = Path(args.optimized)
    optimized = json.loads(opt_path.read_text()) if opt_path.is_file() else {}
    meps = sorted(p.name for p in Path(args.meps).iterdir() if (p / "mep.toml").is_file())
    doc = summarize(captures, optimized, meps)
    doc["captures"] = captures
    md = markdown(doc)
    write_result(Path(args.out), "gpu_samples", doc, md)
    print(md)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("--meps", default=str(ROOT / "bench" / "meps"))
    c.add_argument("--work", required=True)
    c.add_argument("--only", default="", help="comma-separated MEP names")
    c.add_argument("--timeout", type=float, default=90.0, help="seconds for each capture's build, and for its run")
    c.add_argument("--deadline", type=float, default=600.0, help="seconds for the whole step: a capture still running is killed")
    c.add_argument("--parallel", type=int, default=8)
    c.add_argument("--dry", action="store_true", help="run command `true`: build the instrumented applications only")
    s = sub.add_parser("summarize")
    s.add_argument("--meps", default=str(ROOT / "bench" / "meps"))
    s.add_argument("--work", required=True)
    s.add_argument("--optimized", required=True, help="bench/gpu_bench.py's JSON")
    s.add_argument("--out", required=True)
    args = ap.parse_args()
    return cmd_capture(args) if args.cmd == "capture" else cmd_summarize(args)


if __name__ == "__main__":
    sys.exit(main())
