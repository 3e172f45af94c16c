"""Pattern inheritance: evaluations needed to reach the best speedup with an empty pattern library and with
a library filled by optimizing the other kernels first.

    python bench/patterns_bench.py --sample samples/ocl_solver [--max-evals 20] [--out bench/results]

For each kernel K: (a) optimize K with an empty library; (b) optimize every other kernel into a fresh
library, then optimize K with it. Reported: evaluations to each run's best, and evaluations until (b)
reaches 95% of (a)'s best speedup.
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from provenance import commit, write_result

from s2s.extract.mep_writer import make_mep
from s2s.mep.history import History
from s2s.optimize.loop import Options, optimize
from s2s.scan.tree import scan_tree


def _run(tree: str, kernel: str, work: Path, tag: str, library: Path, max_evals: int, use: bool) -> tuple[Any, list[Any]]:
    mep = work / f"{tag}-{kernel}"
    if mep.exists():
        shutil.rmtree(mep)
    make_mep(tree, kernel, str(mep))
    out = optimize(mep, Options(max_evals=max_evals, rounds=4, patterns=str(library), use_patterns=use, patience=2))
    rows = History(mep / "history.sqlite").rows()
    return out, rows


def _evals_to_reach(rows: list[Any], target: float) -> int | None:
    n = 0
    for r in rows:
        if r.status == "pending":
            continue
        n += 1
        if r.status == "ok" and (r.speedup or 0) >= target:
            return n
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", default="samples/ocl_solver")
    ap.add_argument("--max-evals", type=int, default=20)
    ap.add_argument("--out", default="bench/results")
    args = ap.parse_args()
    kernels = [k.name for k in scan_tree(args.sample).kernels]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for k in kernels:
            empty = work / f"empty-{k}.json"
            a, _rows_a = _run(args.sample, k, work, "a", empty, args.max_evals, use=False)
            filled = work / f"filled-{k}.json"
            for other in kernels:
                if other != k:
                    _run(args.sample, other, work, f"fill-{k}", filled, args.max_evals, use=True)
            n_patterns = len(json.loads(filled.read_text())["patterns"]) if filled.exists() else 0
            b, rows_b = _run(args.sample, k, work, "b", filled, args.max_evals, use=True)
            reach = _evals_to_reach(rows_b, 0.95 * a.best_speedup) if a.best_speedup > 1 else None
            r = {"kernel": k, "empty": {"best": round(a.best_speedup, 3), "evals_to_best": a.evals_to_best, "evals": a.evaluations},
                 "filled": {"patterns": n_patterns, "best": round(b.best_speedup, 3), "evals_to_best": b.evals_to_best,
                            "evals": b.evaluations, "evals_to_95pct_of_empty_best": reach}}
            results.append(r)
            print(json.dumps(r), flush=True)
    commit_id = commit()
    doc = {"sample": args.sample, "backend": "opencl (PoCL, CPU)", "date": time.strftime("%Y-%m-%d"), "commit": commit_id,
           "max_evals": args.max_evals, "kernels": results}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# Pattern inheritance on {args.sample} ({doc['backend']}, {doc['date']}, commit {commit_id})", "",
             "| kernel | empty: best, evals to best | filled: patterns, best, evals to best | filled: evals to 95% of empty best |",
             "|---|---|---|---|"]
    for r in results:
        e, f = r["empty"], r["filled"]
        lines.append(f"| {r['kernel']} | {e['best']}x, {e['evals_to_best']} | {f['patterns']}, {f['best']}x, {f['evals_to_best']} | "
                     f"{f['evals_to_95pct_of_empty_best']} |")
    write_result(out, "patterns_bench", doc, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
