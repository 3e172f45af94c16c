"""Launches that leave SMs without a block (issue 15): the zoo's underfilled kernels at every 1-D block size, measured
against the cost model's SM-fill rule (s2s.lang.kernel_model.parallelism: fill = occupancy x sm_fill ** SM_SPREAD).

    python bench/gpu_underfill.py OUT_DIR [--only a,b] [--part I/K] [--work DIR] [--dry]

Per kernel the original launch and, for each `launch-config{block=B}` (B = 32, 64, 128, 256, 512; same coverage), the
new launch, how many SMs get a block, the model's fill and predicted speedup, and (on the GPU) the verdict, the median
times and the measured speedup, each verified and timed once against the original (`s2s run`'s evaluation), no
search. The summary says, per kernel, whether the block the model predicts fastest is the one measured fastest, and
whether the model's direction (faster / slower than the original) held for each block. trsm_cols runs on its app's
captured data (the zoo catalog's `capture`), as in bench/gpu_zoo.py. `--dry` (no GPU): extract, apply, build each
variant with nvcc. Writes OUT/underfill[_partIofK].{json,md}. On the H200: about 30 variants at 5-25 s each plus
builds and one capture: two device calls (bench/gpu_underfill.sh OUT COMMIT 1, then 2), each under 580 s.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import commit, write_result  # noqa: E402
from zoo_catalog import BY_NAME  # noqa: E402
from zoo_runs import part_of, rows_of, stem_of, workdir  # noqa: E402

# the zoo kernels whose launch leaves SMs of an H200 without a block (bench/results/underfill_audit.md)
KERNELS = ("trsm_cols", "gemv_rows", "gemv_cols", "gemv_colmajor", "row_sums", "scan_rows", "covar_cols", "nbody_aos")
BLOCKS = (32, 64, 128, 256, 512)
NOISE = 0.02  # a measured speedup within 2% of 1.0 has no direction


def one(name: str, work: Path, dry: bool) -> dict[str, Any]:
    from gpu_zoo import capture, extract

    from s2s.lang.kernel_facts import kernel_facts
    from s2s.lang.kernel_model import parallelism
    from s2s.mep import evaluate
    from s2s.mep.manifest import load
    from s2s.optimize.cost import predict_candidate
    from s2s.optimize.loop import write_variant
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import apply_pipeline

    k = BY_NAME[name]
    mep, unfilled, _fixes = extract(k, work)
    if unfilled:
        return {"kernel": name, "error": f"FILL-IN left: {'; '.join(unfilled)}"}
    row: dict[str, Any] = {"kernel": name, "candidates": []}
    if k.capture and not dry:
        cap = capture(k, mep, work)
        row["capture_rc"] = cap["rc"]
        if cap["rc"] != 0:
            return {**row, "error": f"capture failed: {cap['output'][-200:]}"}
    m = load(mep)
    src = (mep / m.kernel_file).read_bytes()
    state = State(manifest=m, original=src, kernel=name, dialect=m.dialect, facts=kernel_facts(src, m.dialect, name))
    base = predict_candidate(None, state)
    par = parallelism(tuple(m.launch.grid), tuple(m.launch.block))  # type: ignore[arg-type]
    row.update(grid=list(m.launch.grid), block=list(m.launch.block), sms_with_a_block=min(par.blocks, 132),
               fill=round(par.fill, 5), predicted_us=round(base.seconds * 1e6, 2) if base else None)
    for b in BLOCKS:
        pipeline = f"launch-config{{block={b}}}"
        cand = apply_pipeline(pipeline, state)
        entry: dict[str, Any] = {"pipeline": pipeline}
        if isinstance(cand, str):
            row["candidates"].append({**entry, "verdict": "refused", "why": cand})
            continue
        launch = cand.launch or state.base_launch
        cpar = parallelism(launch.grid, launch.block)
        pred = predict_candidate(cand, state)
        entry.update(grid=list(launch.grid), sms_with_a_block=min(cpar.blocks, 132), fill=round(cpar.fill, 5),
                     predicted_speedup=round(base.seconds / pred.seconds, 4) if base and pred else None)
        write_variant(mep, m.kernel_file, cand)
        if dry:
            built = evaluate.build(mep, cand.id)
            row["candidates"].append({**entry, "verdict": "built" if built.ok else "compile-failed"})
            continue
        r = evaluate.evaluate(mep, cand.id)
        entry.update(verdict=r.verdict, speedup=r.speedup, messages=list(r.messages)[:3],
                     original_us=r.ref.median_us if r.ref else None, variant_us=r.var.median_us if r.var else None)
        row["candidates"].append(entry)
    row["agreement"] = agreement(row["candidates"])
    return row


def agreement(cands: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether the model's fastest block is the measured fastest, and per block whether its direction held."""
    timed = [c for c in cands if c.get("verdict") == "ok" and c.get("speedup") and c.get("predicted_speedup")]
    if not timed:
        return {}
    best_measured = max(timed, key=lambda c: c["speedup"])["pipeline"]
    best_predicted = max(timed, key=lambda c: c["predicted_speedup"])["pipeline"]
    held = wrong = flat = 0
    for c in timed:
        measured, predicted = c["speedup"] - 1.0, c["predicted_speedup"] - 1.0
        if abs(measured) <= NOISE:
            continue
        if abs(predicted) < 1e-3:  # the model's one-SM floor holds both launches: it predicts no direction
            flat += 1
        elif predicted * measured > 0:
            held += 1
        else:
            wrong += 1
    return {"best_measured": best_measured, "best_predicted": best_predicted, "same_best": best_measured == best_predicted,
            "direction_held": held, "direction_wrong": wrong, "no_direction_predicted": flat}


def markdown(doc: dict[str, Any]) -> str:
    lines = [f"# Underfilled launches at every 1-D block size ({doc['date']}, commit {doc['commit']}, {doc['device']})", "",
             "Each `launch-config{block=B}` (same coverage) verified and timed once against the original. SMs: how many of "
             "the 132 get a block; fill and predicted speedup from the cost model (SM-fill rule).", "",
             "| kernel | original launch | pipeline | SMs | fill | predicted | verdict | µs | measured |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in doc["kernels"]:
        if "error" in r:
            lines.append(f"| {r['kernel']} | | | | | | {r['error']} | | |")
            continue
        orig = f"{r['grid'][0]} x {r['block'][0]} ({r['sms_with_a_block']} SMs)"
        for c in r["candidates"]:
            pred, got = c.get("predicted_speedup"), c.get("speedup")
            lines.append(f"| {r['kernel']} | {orig} | `{c['pipeline']}` | {c.get('sms_with_a_block', '-')} | {c.get('fill', '-')} | "
                         f"{f'{pred:.2f}x' if pred else '-'} | {c['verdict']} | {c.get('variant_us') or '-'} | "
                         f"{f'{got:.2f}x' if got else '-'} |")
    lines += ["", f"Direction: measured beyond ±{NOISE:.0%} of the original, predicted faster or slower (none: the model's one-SM "
              "floor holds both launches).", "",
              "| kernel | best measured | best predicted | same | direction held | wrong | none predicted |",
              "|---|---|---|---|---|---|---|"]
    for r in doc["kernels"]:
        a = r.get("agreement") or {}
        if a:
            lines.append(f"| {r['kernel']} | `{a['best_measured']}` | `{a['best_predicted']}` | {a['same_best']} | "
                         f"{a['direction_held']} | {a['direction_wrong']} | {a['no_direction_predicted']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--only", default="")
    ap.add_argument("--part", default="1/1")
    ap.add_argument("--work", default="")
    ap.add_argument("--dry", action="store_true")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or list(KERNELS)
    bad = [n for n in names if n not in BY_NAME]
    if bad:
        print(f"gpu_underfill: no zoo kernel {', '.join(bad)}", file=sys.stderr)
        return 2
    picked = part_of(names, args.part, "gpu_underfill")
    if picked is None:
        return 2
    names = picked
    device = "none (dry)"
    if not args.dry:
        from gpu_zoo import _smi_name

        device = _smi_name()
    with workdir(args.work, "s2s-underfill-") as work:
        rows = rows_of(names, lambda name: one(name, work, args.dry))
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit(), "dry": args.dry,
           "device": device, "kernels": rows}
    stem = stem_of("underfill", args.part)
    write_result(Path(args.out), stem, doc, markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
