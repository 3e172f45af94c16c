"""The kernel zoo on the GPU: every zoo kernel extracted, optimized with the built-in proposer, held against the vendor
library and the roofline floor of the device.

    python bench/gpu_zoo.py --dry [--only a,b] [--work DIR] [--out DIR]       # here: extract, nvcc-build apps and MEPs
    python bench/gpu_zoo.py --apps --out DIR                                  # GPU: build and run every zoo app (its own check)
    python bench/gpu_zoo.py --part I/K --out DIR [--deadline 480]             # GPU: optimize part I of K (bench/gpu_zoo.sh: K = 4)
    python bench/gpu_zoo.py --summarize DIR [--out DIR]                       # merge the parts: gpu_zoo_summary.{json,md}

A part fits one 600-second device call: the device's copy bandwidth and the vendor times of its kernels first (CuPy,
FP32, TF32 off), then its kernels optimized several at a time (at most --max-evals evaluations each; a device lock
keeps every timed evaluation alone on the GPU), each MEP's report written. Every figure is from the run's own files;
the summary's geometric mean counts every zoo kernel: failed, not run, or no win count 1.00x. The zoo is the
optimizer's development set: all of it is in-sample.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from geomean import geomean, summary  # noqa: E402
from provenance import commit, write_result  # noqa: E402
from zoo_catalog import BY_NAME, ZOO, ZooKernel, parts, work_of  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ZOO_DIR = ROOT / "bench" / "zoo"
NVCC = ["nvcc", "-arch=sm_90", "-O3"]
SAMPLE = "in-sample (the zoo is the optimizer's development set)"


def apply_fixes(mep: Path, k: ZooKernel) -> list[str]:
    """The catalog's mep.toml edits for k (roles and fills extraction gets wrong, fewer repetitions); what was changed."""
    from s2s.mep import manifest as mf

    if not k.fixes:
        return []
    m = mf.load(mep)
    done = []
    for key, change in k.fixes.items():
        if key.startswith("params."):
            name = key.split(".", 1)[1]
            if not any(p.name == name for p in m.params):
                raise SystemExit(f"zoo_catalog: {k.name} has no parameter {name}")
            m.params = [dataclasses.replace(p, **change) if p.name == name else p for p in m.params]
        elif key == "timing":
            for f, v in change.items():
                setattr(m, f, v)
        done.append(f"{key}: " + ", ".join(f"{f}={v}" for f, v in change.items()))
    mf.save(m, mep)
    return done


def extract(k: ZooKernel, work: Path) -> tuple[Path, list[str], list[str]]:
    """work/meps/NAME from bench/zoo/NAME, the catalog's fixes applied: (mep, unfilled entries, fixes)."""
    from s2s.extract.mep_writer import make_mep

    dest = work / "meps" / k.name
    if dest.exists():
        shutil.rmtree(dest)
    _d, m, _ex = make_mep(str(ZOO_DIR / k.name), k.name, str(dest))
    return dest, m.unfilled(), apply_fixes(dest, k)


def build_app(k: ZooKernel, dest: Path) -> dict[str, Any]:
    dest.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    p = subprocess.run([*NVCC, "-o", str(dest / k.name), str(ZOO_DIR / k.name / f"{k.name}.cu")],
                       capture_output=True, text=True)
    return {"ok": p.returncode == 0, "seconds": round(time.time() - t0, 1), "log": (p.stdout + p.stderr)[-2000:]}


def build_mep(mep: Path) -> dict[str, Any]:
    from s2s.base.errors import UserError
    from s2s.mep import evaluate

    try:
        b = evaluate.build(mep, None)
    except UserError as exc:
        return {"ok": False, "seconds": 0.0, "log": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a harness that does not render is that kernel's failure, not the run's
        return {"ok": False, "seconds": 0.0, "log": f"{type(exc).__name__}: {exc}"}
    return {"ok": b.ok, "seconds": round(b.seconds, 1), "log": (b.log or "; ".join(b.messages))[-2000:]}


def dry(kernels: list[ZooKernel], work: Path, out: Path, jobs: int, apps: bool = True) -> int:
    """Everything that runs without a GPU: extraction (no FILL-IN), the apps and the MEP harnesses built with nvcc."""
    rows: dict[str, dict[str, Any]] = {}
    for k in kernels:
        try:
            mep, unfilled, fixes = extract(k, work)
            rows[k.name] = {"kernel": k.name, "mep": str(mep), "unfilled": unfilled, "fixes": fixes}
        except Exception as exc:  # noqa: BLE001 - one kernel's failure must not hide the others'
            rows[k.name] = {"kernel": k.name, "error": f"extract: {type(exc).__name__}: {exc}"}

    def builds(k: ZooKernel) -> None:
        r = rows[k.name]
        r["app_build"] = build_app(k, work / "apps") if apps else None
        if "mep" in r and not r["unfilled"]:
            r["mep_build"] = build_mep(Path(r["mep"]))

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(builds, kernels))
    bad = [r["kernel"] for r in rows.values()
           if r.get("error") or r.get("unfilled") or (apps and not r["app_build"]["ok"]) or not r.get("mep_build", {}).get("ok")]
    lines = [f"# Kernel zoo, dry run ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit()})", "",
             f"{len(rows) - len(bad)} of {len(rows)} kernels extract with no FILL-IN and build (app and MEP harness) with "
             f"`{' '.join(NVCC)}`.", "", "| kernel | FILL-IN | mep.toml fixes | app build s | MEP build s |", "|---|---|---|---|---|"]
    for r in rows.values():
        lines.append(f"| {r['kernel']} | {len(r.get('unfilled', [])) if 'error' not in r else r['error']} | "
                     f"{'; '.join(r.get('fixes', []))} | {_ok(r.get('app_build'))} | {_ok(r.get('mep_build'))} |")
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit(), "kernels": list(rows.values()),
           "failed": bad}
    write_result(out, "gpu_zoo_dry", doc, "\n".join(lines))
    print("\n".join(lines))
    return 1 if bad else 0


def _ok(b: dict[str, Any] | None) -> str:
    return "-" if b is None else (f"{b['seconds']}" if b["ok"] else f"FAILED: {b['log'][-160:]!r}")


def run_apps(kernels: list[ZooKernel], work: Path, out: Path, jobs: int) -> int:
    """Build and run every zoo app on the GPU: each checks its kernel's output against the CPU and prints a checksum."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        built = dict(zip([k.name for k in kernels], pool.map(lambda k: build_app(k, work / "apps"), kernels)))
    rows = []
    for k in kernels:
        row: dict[str, Any] = {"kernel": k.name, "build": built[k.name]["ok"]}
        if built[k.name]["ok"]:
            t0 = time.time()
            p = subprocess.run([str(work / "apps" / k.name)], capture_output=True, text=True, timeout=120)
            row.update(rc=p.returncode, seconds=round(time.time() - t0, 1), output=(p.stdout + p.stderr).strip()[-300:])
        rows.append(row)
    ok = sum(1 for r in rows if r.get("rc") == 0)
    lines = [f"# Kernel zoo apps on the GPU ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit()})", "",
             f"{ok} of {len(rows)} apps pass their own CPU check.", "", "| app | rc | s | output |", "|---|---|---|---|"]
    lines += [f"| {r['kernel']} | {r.get('rc', 'build failed')} | {r.get('seconds', '-')} | {r.get('output', '')} |" for r in rows]
    write_result(out, "gpu_zoo_apps", {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit(),
                                       "apps": rows}, "\n".join(lines))
    print("\n".join(lines))
    return 0 if ok == len(rows) else 1


def capture(k: ZooKernel, mep: Path, work: Path) -> dict[str, Any]:
    """Record the app's own launch data into the MEP (`s2s capture --into`): for kernels whose invariants
    (monotonic CSR row pointers) generated inputs cannot hold."""
    cmd = [sys.executable, "-m", "s2s", "capture", str(ZOO_DIR / k.name), "--kernel", k.name,
           "--build-cmd", f"{' '.join(NVCC)} -o app {k.name}.cu", "--run-cmd", "./app", "--into", str(mep), "--timeout", "120"]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=str(work))
    return {"rc": p.returncode, "seconds": round(time.time() - t0, 1), "output": (p.stdout + p.stderr).strip()[-600:]}


def history_summary(mep: Path, rows: list[Any] | None = None) -> dict[str, Any]:
    """What the MEP's history holds (`rows`, when the caller has read them), also for a kernel the part stopped
    waiting for: the verdicts, where the evaluations' time went (builds; the harness runs split into start, waits for
    the device, checks and timing), and the best single measurement (not re-timed: never counted as a win)."""
    from s2s.mep.history import History

    if rows is None:
        if not (mep / "history.sqlite").is_file():
            return {}
        hist = History(mep / "history.sqlite")
        rows = hist.rows()
        hist.close()
    spent: dict[str, float] = {}
    for r in rows:
        res = r.result or {}
        spent["build"] = spent.get("build", 0.0) + float(res.get("build_seconds") or 0.0)
        spent["run"] = spent.get("run", 0.0) + float(res.get("run_seconds") or 0.0)
        for k, v in (res.get("phase_seconds") or {}).items():
            spent[f"run.{k}"] = spent.get(f"run.{k}", 0.0) + float(v)
    ok = [r.speedup for r in rows if r.status == "ok" and r.speedup]
    return {"verdicts": {s: sum(1 for r in rows if r.status == s) for s in sorted({r.status for r in rows})},
            "seconds_spent": {k: round(v, 1) for k, v in sorted(spent.items())},
            "best_single_measurement": round(max(ok), 3) if ok else None}


def _retimed(res: dict[str, Any]) -> dict[str, Any] | None:
    """The honest re-timing of the winner, where the optimize loop recorded one (result['retimed'])."""
    r = res.get("retimed") or res.get("retime")
    return r if isinstance(r, dict) and r.get("speedup") else None


def optimize_one(name: str, mep: str, work: str, max_evals: int, rounds: int | None, budget: float,
                 jobs: int = 4) -> dict[str, Any]:
    from s2s.mep.history import History
    from s2s.optimize.loop import Options, optimize

    t0 = time.time()
    row: dict[str, Any] = {"kernel": name}
    opts = Options(max_evals=max_evals, rounds=rounds, patterns=str(Path(work) / f"patterns-{name}.json"),
                   use_patterns=False, jobs=jobs, time_budget_s=budget)
    out = optimize(Path(mep), opts)
    hist = History(Path(mep) / "history.sqlite")
    # the declared winner (re-timed in a fresh alternation, above the noise band), as s2s.optimize.winner leaves it
    best = hist.get(out.best_id) if out.best_id else None
    rows, noise, decision = hist.rows(), hist.meta("noise_band"), hist.meta("winner")
    hist.close()
    row.update(history_summary(Path(mep), rows))
    row.update(evaluations=out.evaluations, evals_to_best=out.evals_to_best, stopped=out.stopped, seconds=round(time.time() - t0, 1),
               device=next(((r.result or {}).get("device", "") for r in rows if r.result and r.result.get("device")), ""),
               noise_band=json.loads(noise) if noise else None, winner=json.loads(decision) if decision else None)
    first = next((r for r in rows if r.ref_us), None)
    row["original_us"] = first.ref_us if first else None
    if best is None:
        row.update(status="no-win", speedup=1.0, speedup_counted=1.0, best_us=row["original_us"], pipeline="")
        return row
    res = best.result or {}
    rt = _retimed(res)
    row.update(status="ok", original_us=best.ref_us, best_us=best.var_us, speedup=best.speedup, pipeline=best.origin, variant=best.id,
               ref_spread_us=(res.get("reference") or {}).get("spread_us"), var_spread_us=(res.get("variant") or {}).get("spread_us"),
               speedup_retimed=rt.get("speedup") if rt else None, speedup_first=(res.get("first") or {}).get("speedup"))
    row["speedup_counted"] = float(rt["speedup"]) if rt else float(best.speedup or 1.0)
    if rt and (rt.get("variant") or {}).get("median_us"):
        row["best_us"] = rt["variant"]["median_us"]
        row["original_us"] = (rt.get("reference") or {}).get("median_us", row["original_us"])
    return row


def _ncu(mep: Path, best: str | None, until: float) -> dict[str, Any] | None:
    """One Nsight Compute run of the original and of the winner, recorded in the history (where ncu is installed and
    the part's deadline leaves time for it)."""
    from s2s.mep import profile_ncu
    from s2s.mep.history import History

    if not profile_ncu.available():
        return None
    if time.time() > until:
        return {"skipped": "the part's deadline"}
    out: dict[str, Any] = {}
    hist = History(mep / "history.sqlite")
    try:
        for key, variant in (("original", None), (best or "", best)):
            if key:
                res = profile_ncu.profile(mep, variant, timeout_s=max(10.0, min(90.0, until + 45 - time.time())))
                profile_ncu.record(hist, key, res)
                out["original" if variant is None else "best"] = dataclasses.asdict(res) if isinstance(res, profile_ncu.Profile) else res
    finally:
        hist.close()
    return out


def _floor_fields(k: ZooKernel, row: dict[str, Any], roof: Any) -> None:
    from s2s.mep.roofline import Work, bound, floor_us

    if roof is None:
        return
    w = Work(*work_of(k))
    fl = floor_us(w, roof)
    row.update(bytes=w.bytes, flops=w.flops, floor_us=round(fl, 3), bound=bound(w, roof))
    for key, t in (("original", row.get("original_us")), ("best", row.get("best_us"))):
        if t:
            row[f"floor_fraction_{key}"] = round(fl / t, 4)
            row[f"gbs_{key}"] = round(w.bytes / (t * 1e3), 1)
            row[f"gflops_{key}"] = round(w.flops / (t * 1e3), 1)


def run_part(index: int, count: int, args: argparse.Namespace) -> int:
    from zoo_vendor import copy_bandwidth_gbs, vendor_time

    from s2s.base.devicelock import device_lock
    from s2s.mep.roofline import Work, measured_roof, record_in_mep

    t_end = time.time() + args.deadline
    kernels = parts(count)[index - 1]
    if args.only:
        kernels = [k for k in kernels if k.name in args.only.split(",")]
    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    with device_lock():  # a second part on the same GPU (bench/gpu_zoo_whole.sh with two parts a GPU) never times beside these
        copy = copy_bandwidth_gbs()
        vendor = {k.name: vendor_time(k.vendor, k.sizes) for k in kernels if k.vendor}
    device = copy.get("device") or _smi_name()
    roof = measured_roof(device, copy.get("gbs"))  # the datasheet bandwidth when the copy could not be measured
    prepared: dict[str, dict[str, Any]] = {}
    for k in kernels:
        info: dict[str, Any] = {}
        try:
            mep, unfilled, fixes = extract(k, work)
            info.update(mep=str(mep), fixes=fixes, why_fixed=k.why_fixed if fixes else "")
            if unfilled:
                info["error"] = f"FILL-IN: {unfilled}"
            if k.capture:
                with device_lock():
                    info["capture"] = capture(k, mep, work)
                if info["capture"]["rc"] != 0:
                    info["error"] = "capture failed"
            if roof is not None:
                record_in_mep(mep, Work(*work_of(k)), roof, note=f"zoo catalog: {k.family}, {k.style}")
        except Exception as exc:  # noqa: BLE001
            info["error"] = f"{type(exc).__name__}: {exc}"[:400]
        prepared[k.name] = info
    runnable = [k for k in kernels if "error" not in prepared[k.name]]
    left = t_end - time.time() - 25  # reports and archive at the end
    waves = max(1, -(-len(runnable) // args.parallel))
    # the loop gets three quarters of a kernel's share: the rest goes to declaring its winner (the original against
    # itself three times, the top candidates re-timed; every kernel of a wave needs the device alone for those timings
    # at about the same moment), its ncu runs and its report
    budget = max(40.0, 0.75 * left / waves - 45)
    results: dict[str, dict[str, Any]] = {}
    # spawned workers: the CUDA context CuPy opened here for the vendor timings is never forked
    pool = ProcessPoolExecutor(max_workers=args.parallel, mp_context=multiprocessing.get_context("spawn"))
    try:
        # builds share the cores: --jobs compilers for the part (the machine's cores over the parts running at once)
        jobs = max(1, min(4, args.jobs // max(1, min(args.parallel, len(runnable)))))
        futs = {k.name: pool.submit(optimize_one, k.name, prepared[k.name]["mep"], str(work), args.max_evals, args.rounds,
                                    budget, jobs) for k in runnable}
        for name, f in futs.items():
            try:
                results[name] = f.result(timeout=max(1.0, t_end - 20 - time.time()))
            except Exception as exc:  # noqa: BLE001 - a kernel that failed or ran out of time counts 1.00x
                results[name] = {"kernel": name, "status": f"error: {type(exc).__name__}: {exc}"[:400], "speedup_counted": 1.0,
                                 **history_summary(Path(prepared[name]["mep"]))}
    finally:
        # past the deadline the results written so far are what counts: the kernels still running are stopped, so
        # that they leave the device and the cores to the part's reports (their MEPs keep what they recorded)
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
    # the profiles come once every kernel is done: ncu holds the device alone for many seconds, which in the middle of
    # the part stalled every other kernel's evaluations; the largest original times first, while the deadline allows
    for name in sorted(results, key=lambda n: -(results[n].get("original_us") or 0.0)):
        r = results[name]
        if r.get("status") in ("ok", "no-win"):
            r["ncu"] = _ncu(Path(prepared[name]["mep"]), r.get("variant") if r["status"] == "ok" else None, t_end - 60)
    rows = []
    for k in kernels:
        row = {"kernel": k.name, "family": k.family, "style": k.style, "sample": SAMPLE, **prepared[k.name]}
        row.update(results.get(k.name) or {"status": f"not-run: {prepared[k.name].get('error', 'deadline')}", "speedup_counted": 1.0})
        _floor_fields(k, row, roof)
        v = vendor.get(k.name)
        if v:
            row["vendor"] = v
            if v.get("median_us") and row.get("best_us"):
                row["vendor_over_best"] = round(v["median_us"] / row["best_us"], 4)  # > 1: faster than the library
        rows.append(row)
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit(), "device": device, "part": f"{index}/{count}",
           "max_evals": args.max_evals, "copy": copy, "roof": dataclasses.asdict(roof) if roof else None, "kernels": rows,
           "geomean_part": round(geomean([r.get("speedup_counted") for r in rows]), 3)}
    write_result(out, f"gpu_zoo_part{index}of{count}", doc, "\n".join(table(doc)))  # the results first, then the reports
    print("\n".join(table(doc)))
    for row in rows:  # each MEP's own report (and its history), while the part's time lasts
        where = Path(row["mep"]) if "mep" in row else None
        if where is None or not (where / "history.sqlite").is_file():
            continue
        dest = out / "reports" / row["kernel"]
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(where / "history.sqlite", dest / "history.sqlite")
        shutil.copy2(where / "mep.toml", dest / "mep.toml")  # bench/cost_model_accuracy.py reads the pair
        if time.time() < t_end:
            _report(where, dest)
    return 0


def _smi_name() -> str:
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        return p.stdout.strip().splitlines()[0] if p.returncode == 0 and p.stdout.strip() else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _report(mep: Path, dest: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "s2s", "report", str(mep)], capture_output=True, text=True)
    if p.returncode == 0:
        dest.mkdir(parents=True, exist_ok=True)
        for f in ("report.md", "report.html", "report.png"):
            if (mep / f).is_file():
                shutil.copy(mep / f, dest / f)


def _x(v: Any, fmt: str = "{:.2f}") -> str:
    return fmt.format(v) if isinstance(v, (int, float)) else "-"


def table(doc: dict[str, Any]) -> list[str]:
    copy = doc.get("copy") or {}
    commits = ", ".join(doc.get("commits") or [doc["commit"]])
    lines = [f"# Kernel zoo on {doc.get('device') or '?'}, part {doc.get('part', 'all')} ({doc['date']}, commit{'s' if ', ' in commits else ''} {commits})", "",
             f"Built-in proposer, at most {doc.get('max_evals')} evaluations per kernel (per part); every winner verified against the original. "
             f"Measured copy bandwidth {_x(copy.get('gbs'), '{:.0f}')} GB/s (cudaMemcpy device to device, read + written). "
             f"All kernels {SAMPLE}.", "",
             f"Geometric mean over the {len(doc['kernels'])} kernels (failed / not run / no win = 1.00x): "
             f"**{doc.get('geomean_part', doc.get('geomean', 1.0)):.2f}x**.", "",
             "| kernel | family | original µs | best µs | speedup (re-timed) | evals (to best) | floor µs | floor reached: orig / best "
             "| vendor µs | vendor / best | ncu orig -> best | pipeline | status |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["kernels"]:
        v = r.get("vendor") or {}
        lines.append(
            f"| {r['kernel']} | {r.get('family', '')} | {_x(r.get('original_us'))} | {_x(r.get('best_us'))} | "
            f"{_x(r.get('speedup'), '{:.2f}x')} ({_x(r.get('speedup_retimed'), '{:.2f}x')}) | {r.get('evaluations', '-')} ({r.get('evals_to_best', '-')}) | "
            f"{_x(r.get('floor_us'))} | {_x(r.get('floor_fraction_original'), '{:.0%}')} / {_x(r.get('floor_fraction_best'), '{:.0%}')} | "
            f"{_x(v.get('median_us'))} | {_x(r.get('vendor_over_best'))} | {_ncu_cell(r.get('ncu'))} | `{r.get('pipeline', '')}` | "
            f"{r.get('status', '')} |")
    return lines


def _ncu_cell(n: dict[str, Any] | None) -> str:
    """DRAM GB/s, occupancy and limiter of the original -> the winner, as Nsight Compute measured them."""
    if not n:
        return "-"
    parts = []
    for key in ("original", "best"):
        p = n.get(key) or {}
        parts.append(f"{p['dram_gbs']:.0f} GB/s, occ {p['occupancy_pct']:.0f}%, {p['limiter']}" if "dram_gbs" in p else "?")
    return " -> ".join(parts)


def summarize(run: Path, out: Path) -> int:
    """gpu_zoo_summary.{json,md} from every gpu_zoo_part*.json in RUN; a zoo kernel in no part counts 1.00x, not run."""
    rows: dict[str, dict[str, Any]] = {}
    docs = [json.loads(p.read_text()) for p in sorted(run.glob("gpu_zoo_part*.json"))]
    for d in docs:  # a kernel in several parts: the later file's row (name the parts in run order)
        for r in d["kernels"]:
            rows[r["kernel"]] = {**r, "commit": d.get("commit")}
    for k in ZOO:
        rows.setdefault(k.name, {"kernel": k.name, "family": k.family, "status": "not-run: in no part's results", "speedup_counted": 1.0})
    ordered = [rows[k.name] for k in ZOO]
    fams: dict[str, list[float]] = {}
    for r in ordered:
        fams.setdefault(str(r.get("family")), []).append(float(r.get("speedup_counted") or 1.0))
    gemm_like = [r for r in ordered if BY_NAME[r["kernel"]].family == "blas3" and r.get("vendor_over_best")]
    membound = [r for r in ordered if r.get("bound") == "memory" and r.get("floor_fraction_best")]
    doc = {"date": docs[-1]["date"] if docs else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "commit": docs[-1]["commit"] if docs else commit(),
           "commits": sorted({str(r.get("commit")) for r in rows.values() if r.get("commit")}), "device": next((d["device"] for d in docs if d.get("device")), ""),
           "max_evals": "-".join(str(v) for v in sorted({d["max_evals"] for d in docs if d.get("max_evals")})) or None,
           "copy": docs[-1]["copy"] if docs else None,
           "geomean": round(geomean([r.get("speedup_counted") for r in ordered]), 3), "kernels_attempted": len(ordered),
           "kernels_run": sum(1 for r in ordered if not str(r.get("status", "")).startswith(("not-run", "error"))),
           "geomean_by_family": {f: round(geomean(v), 3) for f, v in fams.items()},
           "summary": summary([r.get("speedup_counted") for r in ordered], "in-sample"),
           "gemm_within_2x_of_vendor": f"{sum(1 for r in gemm_like if r['vendor_over_best'] >= 0.5)} of {len(gemm_like)}",
           "memory_bound_at_70pct_of_copy": f"{sum(1 for r in membound if r['floor_fraction_best'] >= 0.7)} of {len(membound)}",
           "sample": SAMPLE, "kernels": ordered}
    lines = table({**doc, "part": "all"})
    lines[6:6] = ["Per family: " + ", ".join(f"{f} {g:.2f}x" for f, g in doc["geomean_by_family"].items()) + ". "
                  f"BLAS-3 kernels within 2x of the vendor library: {doc['gemm_within_2x_of_vendor']}; memory-bound kernels at >= 70% "
                  f"of the measured copy bandwidth: {doc['memory_bound_at_70pct_of_copy']}.", ""]
    write_result(out, "gpu_zoo_summary", doc, "\n".join(lines))
    print("\n".join(lines))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--dry", action="store_true", help="extract and build everything with nvcc; no GPU")
    mode.add_argument("--apps", action="store_true", help="build and run every zoo app on the GPU")
    mode.add_argument("--part", help="I/K: optimize part I of the zoo split into K parts")
    mode.add_argument("--summarize", metavar="RUN", help="merge RUN/gpu_zoo_part*.json into gpu_zoo_summary")
    ap.add_argument("--out", default=None, help="result directory (default: bench/results/gpu-zoo, or RUN for --summarize)")
    ap.add_argument("--work", default="/tmp/s2s-zoo")
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                    help="compilers at once (--part: for the whole part, shared by its kernels)")
    ap.add_argument("--no-apps", action="store_true", help="--dry: build the MEPs only, not the apps")
    ap.add_argument("--parallel", type=int, default=4, help="kernels optimized at once (--part)")
    ap.add_argument("--max-evals", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=None, help="at most N rounds (default: the loop's, until the budget)")
    ap.add_argument("--deadline", type=float, default=480.0, help="seconds for the whole part")
    args = ap.parse_args()
    os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")
    kernels = [k for k in ZOO if not args.only or k.name in args.only.split(",")]
    if args.summarize:
        return summarize(Path(args.summarize), Path(args.out or args.summarize))
    out = Path(args.out or ROOT / "bench" / "results" / "gpu-zoo")
    if args.dry:
        return dry(kernels, Path(args.work), out, args.jobs, apps=not args.no_apps)
    if args.apps:
        return run_apps(kernels, Path(args.work), out, args.jobs)
    index, count = (int(x) for x in args.part.split("/"))
    return run_part(index, count, args)


if __name__ == "__main__":
    sys.exit(main())
