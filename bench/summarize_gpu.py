"""The GPU evidence of one run, summarized: speedups (all, CUDA, HIP), pattern inheritance, whole applications.

    python bench/summarize_gpu.py bench/results/gpu-run3 [--out bench/results]

Reads RUN/gpu_optimize.json, and where present RUN/gpu_optimize_inherited.json and RUN/app_bench.json;
writes OUT/gpu_optimize_summary.{json,md}. Nothing is measured here: every figure comes from the run's files.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from geomean import geomean
from provenance import write_result

SAMPLE_KIND = "in-sample: the sample kernels the built-in passes were developed on"


def refused_on_app_data(run: Path) -> set[str]:
    """MEPs whose winner the application's own captured data refused (app_bench.json): they count 1.00x."""
    app = run / "app_bench.json"
    if not app.is_file():
        return set()
    return {entry.split(":")[0] for a in json.loads(app.read_text()) for entry in a.get("skipped", []) if "captured data" in entry}


def counted(row: dict[str, Any], refused: set[str]) -> float:
    """What a kernel counts in the geomean: its verified (re-timed) speedup, else 1.00x (refused on the application's
    data, failed, not run, no win)."""
    if row.get("mep") in refused or row.get("status") != "ok":
        return 1.0
    return float(row.get("speedup") or 1.0)


def _backend(row: dict[str, Any]) -> str:
    return "hip" if ".hip_" in row["mep"] or "hip_particles" in row["mep"] else "cuda"


def summarize(run: Path) -> tuple[dict[str, Any], str]:
    main = json.loads((run / "gpu_optimize.json").read_text())
    rows = main["kernels"]
    refused = refused_on_app_data(run)
    cuda = [counted(r, refused) for r in rows if _backend(r) == "cuda"]  # every kernel attempted counts
    hip = [counted(r, refused) for r in rows if _backend(r) == "hip"]
    ran = [r for r in rows if not str(r.get("status", "")).startswith("not-run")]
    s: dict[str, Any] = {"run": run.name, "date": main["date"], "commit": main["commit"], "device": main["device"],
                         "max_evals": main["max_evals"], "kernels_run": len(ran), "kernels": len(rows),
                         "sample_kind": SAMPLE_KIND, "refused_on_app_data": sorted(refused),
                         "geomean_speedup": round(geomean([counted(r, refused) for r in rows]), 3),
                         "geomean_cuda": round(geomean(cuda), 3), "geomean_hip": round(geomean(hip), 3),
                         "cuda_kernels": len(cuda), "hip_kernels": len(hip), "rows": rows}
    lines = [f"# Built-in proposer on the {main['device']}: every CUDA and HIP sample kernel", "",
             f"Run `{run.name}`, {main['date']}, commit {main['commit']}: all kernels from one commit, one device call "
             f"(`bench/gpu_all.sh`). Every winner was verified against the original kernel on every output over several "
             "input sets (fresh seeds, poisoned and stale outputs, guard regions, input-modification checks) and timed in "
             f"alternation with it (CUDA events, L2 flushed, median). At most {main['max_evals']} evaluations per kernel.", "",
             f"Geometric-mean speedup ({SAMPLE_KIND}): **{s['geomean_cuda']:.2f}x over the {len(cuda)} CUDA kernels**, "
             f"{s['geomean_hip']:.2f}x over the {len(hip)} HIP kernels (run through the HIP-to-CUDA header), "
             f"{s['geomean_speedup']:.2f}x over all {len(rows)}. Every kernel attempted counts: a winner refused on the "
             f"application's data ({', '.join(sorted(refused)) or 'none'}), a failure, a kernel not run and no win count 1.00x.", "",
             "| kernel | original µs (IQR) | best µs (IQR) | speedup | build s | evals (to best) | pipeline | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if str(r.get("status", "")).startswith("not-run"):
            lines.append(f"| {r['mep']} | - | - | - | - | - | - | {r['status']} |")
            continue
        lines.append(f"| {r['mep']} | {r.get('original_us') or 0:.2f} ({r.get('ref_spread_us') or 0:.2f}) | "
                     f"{r.get('best_us') or 0:.2f} ({r.get('var_spread_us') or 0:.2f}) | {float(r.get('speedup') or 1):.2f}x | "
                     f"{r.get('build_seconds') or 0:.2f} | {r.get('evaluations')} ({r.get('evals_to_best')}) | "
                     f"`{r.get('pipeline', '')}` | {r.get('status')} ({', '.join(f'{k}: {v}' for k, v in sorted((r.get('verdicts') or {}).items()))}) |")
    inh = run / "gpu_optimize_inherited.json"
    if inh.is_file():
        lines += ["", *_inheritance(rows, json.loads(inh.read_text())["kernels"], s)]
    app = run / "app_bench.json"
    if app.is_file():
        lines += ["", *_apps(json.loads(app.read_text()), s)]
    truth = run / "reduction_truth.json"
    if truth.is_file():
        tr = json.loads(truth.read_text())
        s["reduction_truth"] = tr
        lines += ["", f"Which is right on the reduction that was refused: on the application's captured data the exact "
                  f"(float64) `{tr['output']}` is {tr['exact']:.6e}; the original kernel wrote {tr['application']:.6e} "
                  f"(relative error {tr['application_rel_err']:.2%}), the refused variant {tr.get('variant', float('nan')):.6e} "
                  f"({tr.get('variant_rel_err', float('nan')):.2%}). The refusal keeps the application's results unchanged; "
                  "the original's result is the inaccurate one (`bench/reduction_truth.py`)."]
    return s, "\n".join(lines) + "\n"


def _inheritance(rows: list[dict[str, Any]], inherited: list[dict[str, Any]], s: dict[str, Any]) -> list[str]:
    by = {r["mep"]: r for r in rows}
    out = ["## Pattern inheritance (leave-one-out)", "",
           "Each kernel again from scratch, its pattern library filled with what the OTHER twelve kernels' runs learned. "
           "Evaluations to the best: with an empty library vs with the inherited one.", "",
           "| kernel | empty: best (evals to best) | inherited: best (evals to best) | patterns offered |", "|---|---|---|---|"]
    pairs = []
    for r in inherited:
        e = by.get(r["mep"], {})
        if str(r.get("status", "")).startswith("not-run"):
            out.append(f"| {r['mep']} | {float(e.get('speedup') or 1):.2f}x ({e.get('evals_to_best')}) | not run (deadline) | - |")
            continue
        pairs.append((e.get("evals_to_best") or 0, r.get("evals_to_best") or 0))
        out.append(f"| {r['mep']} | {float(e.get('speedup') or 1):.2f}x ({e.get('evals_to_best')}) | "
                   f"{float(r.get('speedup') or 1):.2f}x ({r.get('evals_to_best')}) | {r.get('inherited_patterns', '-')} |")
    if pairs:
        s["inheritance"] = {"kernels": len(pairs), "evals_to_best_empty": sum(a for a, _ in pairs),
                            "evals_to_best_inherited": sum(b for _, b in pairs)}
        out += ["", f"Over the {len(pairs)} kernels that ran both ways: {sum(a for a, _ in pairs)} evaluations to the best with an "
                f"empty library, {sum(b for _, b in pairs)} with the inherited one."]
    return out


def _apps(apps: list[dict[str, Any]], s: dict[str, Any]) -> list[str]:
    out = ["## Whole applications, winners reintegrated", ""]
    s["apps"] = []
    for a in apps:
        same = all(a.get("same_results", {}).values()) and bool(a.get("same_results"))
        phases = [f"{k}: {a['phases_ms_before'][k]:.2f} -> {a['phases_ms_after'].get(k, float('nan')):.2f} ms"
                  for k in a.get("phases_ms_before", {})]
        s["apps"].append({"sample": a["sample"], "same_results": same, "before_s": a.get("before_s"), "after_s": a.get("after_s"),
                          "phases_ms_before": a.get("phases_ms_before"), "phases_ms_after": a.get("phases_ms_after")})
        out += [f"- **{a['sample']}**: {len(a.get('applied', []))} winners reintegrated; every checksum the same: **{same}**; "
                f"the application's own GPU-timed phases {'; '.join(phases) or '-'}; process wall time (median) "
                f"{a.get('before_s') or 0:.3f} s -> {a.get('after_s') or 0:.3f} s."]
        for c in a.get("checked_on_captured_data", []):
            out.append(f"  - held to the application's captured data: {c[:400]}{'...' if len(c) > 400 else ''}")
        for k in a.get("skipped", []):
            out.append(f"  - not reintegrated: {k}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args()
    s, md = summarize(Path(args.run))
    out = Path(args.out)
    write_result(out, "gpu_optimize_summary", s, md)
    print(json.dumps({k: s[k] for k in ("geomean_speedup", "geomean_cuda", "geomean_hip", "kernels_run")}))


if __name__ == "__main__":
    main()
