"""Optimize every benchmark MEP on the GPU with the built-in proposer, and write the evidence.

    python bench/gpu_bench.py --meps bench/meps --out DIR [--max-evals 30] [--parallel 4]

Several kernels are optimized at once (their builds overlap on the CPU cores); a device lock keeps
every timed evaluation alone on the GPU. Per kernel: the original's and the winner's median time,
the speedup, the pipeline, evaluations used, and the winner's per-output verdict.
"""
from __future__ import annotations

import argparse
import json
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from geomean import geomean
from provenance import commit, write_result


def _leave_one_out(inherit: Path, name: str, dest: Path) -> int:
    """A library holding what every OTHER kernel's run learned (their per-kernel libraries merged)."""
    merged: list[dict[str, Any]] = []
    for lib in sorted(inherit.glob("patterns-*.json")):
        if lib.name != f"patterns-{name}.json":
            merged.extend(json.loads(lib.read_text()).get("patterns", []))
    dest.write_text(json.dumps({"schema": "s2s.patterns/1", "patterns": merged}))
    return len(merged)


def _on_captured_data(mep: Path, rows: list[Any]) -> dict[str, Any] | None:
    """Whether the MEP carries the application's own data (`s2s capture --into`): every candidate was then checked on
    it first; how many candidates failed there (a failing output's message names the captured input set)."""
    from s2s.mep.manifest import load

    cap = load(mep).capture
    if not cap:
        return None
    refused = [r.id for r in rows if r.status != "ok" and any(not o.get("ok", True) and "captured input set" in str(o.get("message", ""))
                                                              for o in (r.result or {}).get("outputs", []))]
    return {"sets": cap.get("sets"), "from": cap.get("from", ""), "refused_candidates": len(refused)}


def one(mep_src: str, work: str, max_evals: int, rounds: int, patterns: str | None, deadline: float,
        inherit: str | None = None, jobs: int = 6, reserve: float = 10.0) -> dict[str, Any]:
    from s2s.base.errors import UserError
    from s2s.mep.history import History
    from s2s.optimize.loop import Options, optimize

    src = Path(mep_src)
    mep = Path(work) / src.name
    if mep.exists():
        shutil.rmtree(mep)
    shutil.copytree(src, mep, ignore=shutil.ignore_patterns("build", "variants", "history.sqlite*"))
    t0 = time.time()
    row: dict[str, Any] = {"mep": src.name}
    left = deadline - time.time()
    if left < 20:
        row.update(status="not-run: benchmark deadline reached")
        return row
    if inherit:
        patterns = str(Path(work) / f"inherited-{src.name}.json")
        row["inherited_patterns"] = _leave_one_out(Path(inherit), src.name, Path(patterns))
    opts = Options(max_evals=max_evals, rounds=rounds, patterns=patterns or str(Path(work) / f"patterns-{src.name}.json"),
                   use_patterns=patterns is not None, jobs=jobs, time_budget_s=left - reserve)
    try:
        out = optimize(mep, opts)
    except UserError as err:  # e.g. the reference does not reproduce the application's captured outputs
        row.update(status=f"refused: {err.one_line()}"[:400], speedup=1.0, seconds=round(time.time() - t0, 1))
        return row
    hist = History(mep / "history.sqlite")
    best = hist.get(out.best_id) if out.best_id else None  # the declared winner: re-timed, above the noise band
    rows = hist.rows()
    row.update(noise_band=json.loads(hist.meta("noise_band") or "null"), winner=json.loads(hist.meta("winner") or "null"),
               captured=_on_captured_data(mep, rows))
    hist.close()
    row.update(evaluations=out.evaluations, evals_to_best=out.evals_to_best, stopped=out.stopped, seconds=round(time.time() - t0, 1),
               verdicts={s: sum(1 for r in rows if r.status == s) for s in {r.status for r in rows}},
               device=next(((r.result or {}).get("device", "") for r in rows if r.result and r.result.get("device")), ""))
    if best is None:
        row.update(status="no-win", original_us=None, best_us=None, speedup=1.0, pipeline="")
        return row
    res = best.result or {}
    row.update(status="ok", original_us=best.ref_us, best_us=best.var_us, speedup=best.speedup, pipeline=best.origin,
               variant=best.id, outputs=[{k: o[k] for k in ("name", "ok", "max_rel_err", "unwritten")} for o in res.get("outputs", [])],
               input_sets=res.get("input_sets"), build_seconds=res.get("build_seconds"),
               ref_spread_us=(res.get("reference") or {}).get("spread_us"),
               var_spread_us=(res.get("variant") or {}).get("spread_us"))
    (Path(work) / f"{src.name}.variant.cu").write_bytes((mep / "variants" / best.id / "kernel.cu").read_bytes()
                                                       if (mep / "variants" / best.id / "kernel.cu").exists() else b"")
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--meps", default="bench/meps")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/s2s-gpu-work")
    ap.add_argument("--max-evals", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--only", default="", help="comma-separated MEP names")
    ap.add_argument("--patterns", default=None, help="shared pattern library (default: an empty one per kernel)")
    ap.add_argument("--deadline", type=float, default=480.0, help="seconds for the whole benchmark")
    ap.add_argument("--inherit", default=None, help="work dir of an earlier run: each kernel starts with the others' patterns")
    ap.add_argument("--jobs", type=int, default=6, help="candidates each kernel builds at once")
    ap.add_argument("--reserve", type=float, default=10.0,
                    help="seconds before the deadline each kernel's loop stops, kept for declaring its winner")
    ap.add_argument("--tag", default="gpu_optimize", help="name of the result files")
    ap.add_argument("--sample-kind", default="in-sample: the sample kernels the built-in passes were developed on",
                    help="in-sample, development corpus or held-out split (bench/geomean.py's labels), said in the output")
    args = ap.parse_args()
    meps = sorted(p for p in Path(args.meps).iterdir() if (p / "mep.toml").is_file())
    if args.only:
        meps = [p for p in meps if p.name in args.only.split(",")]
    Path(args.work).mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    pool = ProcessPoolExecutor(max_workers=args.parallel)
    try:
        deadline = time.time() + args.deadline
        futs = [pool.submit(one, str(p), args.work, args.max_evals, args.rounds, args.patterns, deadline, args.inherit,
                            args.jobs, args.reserve) for p in meps]
        for p, f in zip(meps, futs):
            try:  # a kernel still running 30 s past the deadline counts as not finished; the others' results are written
                r = f.result(timeout=max(1.0, deadline + 30 - time.time()))
            except FutureTimeout:
                r = {"mep": p.name, "status": "not-run: not finished by the benchmark deadline"}
            except Exception as exc:  # noqa: BLE001 - one kernel's failure must not lose the others' results
                r = {"mep": p.name, "status": f"error: {type(exc).__name__}: {exc}"}
            results.append(r)
            print(json.dumps(r), flush=True)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    geo = geomean([r.get("speedup") if r.get("status") == "ok" else 1.0 for r in results])  # every kernel attempted
    commit_id = commit()
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit_id,
           "device": next((r.get("device") for r in results if r.get("device")), ""), "max_evals": args.max_evals,
           "geomean_speedup": round(geo, 3), "sample_kind": args.sample_kind, "kernels": results}
    lines = [f"# Built-in proposer on {doc['device']} ({doc['date']}, commit {commit_id})", "",
             f"Geometric-mean speedup over all {len(results)} kernels attempted ({args.sample_kind}): **{geo:.2f}x** (at most "
             f"{args.max_evals} evaluations each; every winner verified against the original on every output and several "
             "input sets, re-timed against it and above its noise band; failed, not run and no win count 1.00x).", "",
             "| kernel | original µs (IQR) | best µs (IQR) | speedup | build s | evals (to best) | pipeline | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.get('mep')} | {_f(r.get('original_us'))} ({_f(r.get('ref_spread_us'))}) | {_f(r.get('best_us'))} "
                     f"({_f(r.get('var_spread_us'))}) | {_f(r.get('speedup'))}x | {_f(r.get('build_seconds'))} | "
                     f"{r.get('evaluations', '')} ({r.get('evals_to_best', '')}) | `{r.get('pipeline', '')}` | {r.get('status')} |")
    write_result(out, args.tag, doc, "\n".join(lines))
    print("\n".join(lines))


def _f(v: Any) -> str:
    return f"{v:.2f}" if isinstance(v, (int, float)) else "-"


if __name__ == "__main__":
    main()
