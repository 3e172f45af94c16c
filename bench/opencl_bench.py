"""The built-in proposer on every kernel of the OpenCL sample, on PoCL (CPU): verified speedups and their geomean.

    python bench/opencl_bench.py [--max-evals 20] [--out bench/results]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from geomean import geomean
from provenance import commit, write_result

from s2s.extract.mep_writer import make_mep
from s2s.optimize.loop import Options, optimize
from s2s.scan.tree import scan_tree


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", default="samples/ocl_solver")
    ap.add_argument("--max-evals", type=int, default=20)
    ap.add_argument("--out", default="bench/results")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in scan_tree(args.sample).kernels:
            mep = Path(tmp) / k.name
            make_mep(args.sample, k.name, str(mep))
            out = optimize(mep, Options(max_evals=args.max_evals, rounds=4, use_patterns=False,
                                        patterns=str(Path(tmp) / "patterns.json")))
            best = next((r for r in out.rows if r.id == out.best_id), None)
            rows.append({"kernel": k.name, "speedup": round(out.best_speedup, 3), "pipeline": out.best_origin,
                         "evaluations": out.evaluations, "evals_to_best": out.evals_to_best,
                         "original_us": best.ref_us if best else None, "best_us": best.var_us if best else None})
            print(json.dumps(rows[-1]), flush=True)
    geo = geomean([r["speedup"] if r["pipeline"] else 1.0 for r in rows])  # every kernel attempted; no win = 1.00x
    commit_id = commit()
    doc = {"sample": args.sample, "device": "PoCL (CPU, 2 cores)", "date": time.strftime("%Y-%m-%d"), "commit": commit_id,
           "geomean_speedup": round(geo, 3), "kernels": rows}
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"# Built-in proposer on {args.sample}, PoCL on 2 CPU cores ({doc['date']}, commit {commit_id})", "",
             f"Geometric-mean verified speedup over all {len(rows)} kernels (in-sample: the sample the passes were developed "
             f"on; no win counts 1.00x): **{geo:.2f}x** (at most {args.max_evals} evaluations per kernel, winners re-timed "
             "against the original and above its noise band).", "",
             "| kernel | original µs | best µs | speedup | evals (to best) | pipeline |", "|---|---|---|---|---|---|"]
    for r in rows:
        o, b = r["original_us"], r["best_us"]
        lines.append(f"| {r['kernel']} | {o or '-'} | {b or '-'} | {r['speedup']:.2f}x | {r['evaluations']} ({r['evals_to_best']}) | "
                     f"`{r['pipeline']}` |")
    write_result(out_dir, "opencl_optimize", doc, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
