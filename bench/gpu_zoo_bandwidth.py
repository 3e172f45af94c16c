"""The zoo's bandwidth-bound kernels against the measured copy bandwidth (issue 15: each at >= 70%): the original and
the named pipelines the analysis expects to get there, each verified and timed once (`s2s run`'s evaluation), no search.

    python bench/gpu_zoo_bandwidth.py OUT_DIR [--only a,b] [--part I/K] [--work DIR] [--dry]

Per kernel: the copy bandwidth (cudaMemcpy device to device, read + written, CuPy), the floor (the catalog's compulsory
bytes / that bandwidth), and for the original and every pipeline its verdict, median µs and fraction of the floor
(floor µs / measured µs). `--dry` (no GPU): extract, apply every pipeline and build each variant's harness with nvcc.
Writes OUT/zoo_bandwidth[_partIofK].{json,md}. On the H200 a pipeline costs its nvcc build and an evaluation of 5-25 s
(eval_cost_77243d5.md), about 25 s in all for 35 pipelines: three device calls (bench/gpu_zoo_bandwidth.sh OUT COMMIT 1..3).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import commit, write_result  # noqa: E402
from zoo_catalog import BY_NAME, work_of  # noqa: E402
from zoo_runs import part_of, rows_of, stem_of, workdir  # noqa: E402

# kernel -> pipelines that should reach 70% of the copy bandwidth (the analysis in the issue-15 report), best guess first
PLANS: dict[str, tuple[str, ...]] = {
    "axpy": ("vector-elementwise",),
    "axpby_strided": ("vector-elementwise", "vector-elementwise{fill=1}"),
    "dot_atomic": ("warp-reduce-atomics",),
    "dot_blocks": ("block-reduce-shuffle",),
    "reduce_atomic": ("atomic-accumulate,warp-reduce-atomics", "atomic-accumulate", "warp-reduce-atomics"),
    "reduce_max_blocks": ("loop-unroll{factor=4}", "block-reduce-shuffle"),
    "gemv_rows": ("split-reduction", "warp-rows{lanes=32}", "vector-loads{width=4}"),
    "gemv_cols": ("split-reduction{splits=16}",),
    "gemv_colmajor": ("split-reduction{splits=16}", "warp-rows{lanes=32}"),
    "row_sums": ("split-reduction{splits=16}", "split-reduction"),
    "ger": ("thread-coarsen{axis=y factor=4}",),
    "batched_gemm8": ("delinearize-2d{block=8x8x8}",),
    "batched_gemv16": ("vector-loads{width=4}", "inner-loop-threads{block=16x16},coalesce-remap",
                       "inner-loop-threads{block=16x16},coalesce-remap,vector-loads{width=4}"),
    "transpose_2d": ("smem-transpose{tile=32 rows=8}",),
    "transpose_gather": ("delinearize-2d,smem-transpose{tile=32 rows=8}",),
    "jacobi2d": ("thread-coarsen{axis=y factor=4}", "restrict-const,thread-coarsen{axis=y factor=4}"),
    "heat3d_zloop": ("loop-unroll{factor=4}",),
    "laplace3d": ("restrict-const,launch-config{block=64x4},thread-coarsen{axis=z factor=16}",),
    "conv2d_3x3": ("restrict-const,thread-coarsen{axis=y factor=4}",),
    "spmv_csr": ("warp-rows{lanes=32}", "warp-rows{lanes=16}"),
    "scan_rows": ("warp-rows{lanes=32}",),
    "histo_global": ("shared-histogram",),
    "histo_shared": ("grid-stride-fill",),
}


def one(name: str, work: Path, roof: Any, dry: bool) -> dict[str, Any]:
    from gpu_zoo import extract

    from s2s.lang.kernel_facts import kernel_facts
    from s2s.mep import evaluate
    from s2s.mep.manifest import load
    from s2s.mep.roofline import Work, floor_us
    from s2s.optimize.loop import write_variant
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import apply_pipeline

    k = BY_NAME[name]
    mep, unfilled, _fixes = extract(k, work)
    if unfilled:
        return {"kernel": name, "error": f"FILL-IN left: {'; '.join(unfilled)}"}
    m = load(mep)
    src = (mep / m.kernel_file).read_bytes()
    state = State(manifest=m, original=src, kernel=name, dialect=m.dialect, facts=kernel_facts(src, m.dialect, name))
    floor = floor_us(Work(*work_of(k)), roof) if roof is not None else None
    row: dict[str, Any] = {"kernel": name, "floor_us": round(floor, 3) if floor else None, "candidates": []}
    for pipeline in PLANS[name]:
        cand = apply_pipeline(pipeline, state)
        entry: dict[str, Any] = {"pipeline": pipeline}
        if isinstance(cand, str):
            row["candidates"].append({**entry, "verdict": "refused", "why": cand})
            continue
        write_variant(mep, m.kernel_file, cand)
        if dry:
            b = evaluate.build(mep, cand.id)
            row["candidates"].append({**entry, "verdict": "built" if b.ok else "compile-failed"})
            continue
        r = evaluate.evaluate(mep, cand.id)
        entry.update(verdict=r.verdict, speedup=r.speedup, messages=list(r.messages)[:3])
        for side, t in (("original_us", r.ref), ("variant_us", r.var)):
            entry[side] = t.median_us if t else None
        if floor and r.var:
            entry["floor_fraction"] = round(floor / r.var.median_us, 4)
        if floor and r.ref:
            row.setdefault("original_floor_fraction", round(floor / r.ref.median_us, 4))
        row["candidates"].append(entry)
    return row


def markdown(doc: dict[str, Any]) -> str:
    lines = [f"# Zoo bandwidth-bound kernels vs the copy bandwidth ({doc['date']}, commit {doc['commit']}, {doc['device']})", "",
             f"Copy bandwidth {doc.get('copy_gbs') or '-'} GB/s. Floor = compulsory bytes / copy bandwidth; fraction = floor / "
             "measured time (1.0 = at the copy bandwidth). Each pipeline verified and timed once against the original.", "",
             "| kernel | floor µs | original | pipeline | verdict | µs | speedup | fraction of floor |", "|---|---|---|---|---|---|---|---|"]
    for r in doc["kernels"]:
        if "error" in r:
            lines.append(f"| {r['kernel']} | | | | {r['error']} | | | |")
            continue
        orig = r.get("original_floor_fraction")
        for c in r["candidates"]:
            frac = c.get("floor_fraction")
            lines.append(f"| {r['kernel']} | {r.get('floor_us') or '-'} | {f'{orig:.0%}' if orig else '-'} | `{c['pipeline']}` | "
                         f"{c['verdict']} | {c.get('variant_us') or '-'} | {c.get('speedup') or '-'} | "
                         f"{f'{frac:.0%}' if frac else '-'}{' **>= 70%**' if frac and frac >= 0.7 else ''} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--only", default="")
    ap.add_argument("--part", default="1/1")
    ap.add_argument("--work", default="")
    ap.add_argument("--dry", action="store_true")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or list(PLANS)
    bad = [n for n in names if n not in PLANS]
    if bad:
        print(f"gpu_zoo_bandwidth: no plan for {', '.join(bad)} (known: {', '.join(PLANS)})", file=sys.stderr)
        return 2
    picked = part_of(names, args.part, "gpu_zoo_bandwidth")
    if picked is None:
        return 2
    names = picked
    copy: dict[str, Any] = {}
    roof = None
    if not args.dry:
        from zoo_vendor import copy_bandwidth_gbs

        from s2s.mep.roofline import measured_roof

        copy = copy_bandwidth_gbs()
        roof = measured_roof(copy.get("device") or "NVIDIA H200", copy.get("gbs"))
    with workdir(args.work, "s2s-zoo-bw-") as work:
        rows = rows_of(names, lambda name: one(name, work, roof, args.dry))
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit(), "dry": args.dry,
           "device": copy.get("device", "none (dry)"), "copy_gbs": copy.get("gbs"), "kernels": rows}
    stem = stem_of("zoo_bandwidth", args.part)
    write_result(Path(args.out), stem, doc, markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
