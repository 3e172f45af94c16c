"""Each tiled form of every GEMM-like zoo kernel, applied directly (no search), verified and timed, against cuBLAS.

    python bench/gpu_gemm_forms.py OUT_DIR [--dry] [--all-forms] [--kernels a,b] [--deadline S] [--jobs N]

For each GEMM-like zoo kernel: its MEP is extracted as bench/gpu_zoo.py extracts it (the catalog's fixes applied);
each form (a pipeline: contraction-blocking's, contraction-tiling's and register-blocking's configurations, behind
delinearize-2d or inner-loop-threads where the kernel needs its 2-D shape opened first) is applied to the original
kernel; every form that applies is built (in parallel), then run by s2s.mep.evaluate: checked against the original
on the MEP's input sets and timed in alternation with it. Printed and written (OUT_DIR/gpu_gemm_forms.json and .md):
per form the verdict, the original's and the form's median µs, the speedup, the vendor library's time
(bench/zoo_vendor.py: cuBLAS fp32, TF32 off) and vendor / ours (>= 0.5 is the issue's "within 2x of cuBLAS").

`--dry` (no GPU): extraction, rewriting and nvcc builds only. Default forms: contraction-blocking's space, the
previous best (contraction-tiling{tile=64 rows=8}) and register-blocking{tile=128 rx=8 ry=8 tk=8}; `--all-forms`
adds every configuration of contraction-tiling and register-blocking. On the H200 the default set is ~40 evaluations
of a few seconds each after the builds (all kernels' at once, one compiler per core): about 4 minutes. In-sample: the zoo is the optimizer's development set.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_zoo import extract  # noqa: E402
from provenance import commit, write_result  # noqa: E402
from zoo_catalog import BY_NAME, ZooKernel  # noqa: E402

os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")

# kernel -> the step that opens its 2-D contraction shape ("" where the kernel has it already)
GEMM_LIKE: dict[str, str] = {
    "gemm_naive": "", "gemm_scaled": "", "gemm_tn": "", "syrk": "", "syr2k": "",
    "gemm_colmajor": "delinearize-2d", "syrk_lower": "delinearize-2d", "covar_cols": "inner-loop-threads",
    "batched_gemm8": "",
}
DEFAULT_FORMS = ("contraction-blocking", "contraction-blocking{prefetch=true}", "contraction-blocking{bk=16}",
                 "contraction-tiling{tile=64 rows=8}", "register-blocking{tile=128 rx=8 ry=8 tk=8}")


def forms(all_forms: bool) -> list[str]:
    from s2s.optimize.registry import get_pass

    if not all_forms:
        return list(DEFAULT_FORMS)
    out = list(get_pass("contraction-blocking").space)
    for name in ("contraction-tiling", "register-blocking"):
        out += [f for f in get_pass(name).space if f not in out]
    return out


def state_of(mep: Path) -> Any:
    from s2s.lang.kernel_facts import kernel_facts
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    m = load(mep)
    src = (mep / m.kernel_file).read_bytes()
    dialect = "opencl" if m.backend == "opencl" else "cuda"
    return State(manifest=m, original=src, kernel=m.kernel, dialect=dialect, facts=kernel_facts(src, dialect, m.kernel))


def variants_of(k: ZooKernel, mep: Path, pipelines: list[str]) -> list[dict[str, Any]]:
    """Each form applied to the original: {form, pipeline, variant | refused} (the variant written into the MEP)."""
    from s2s.optimize.candidate import Candidate
    from s2s.optimize.loop import write_variant
    from s2s.optimize.proposers.builtin import apply_pipeline

    state = state_of(mep)
    rows = []
    for form in pipelines:
        pipeline = f"{GEMM_LIKE[k.name]},{form}" if GEMM_LIKE[k.name] else form
        cand = apply_pipeline(pipeline, state)
        row: dict[str, Any] = {"form": form, "pipeline": pipeline}
        if isinstance(cand, Candidate):
            write_variant(mep, state.manifest.kernel_file, cand)
            row.update(variant=cand.id, grid=list(cand.launch.grid) if cand.launch else None,
                       block=list(cand.launch.block) if cand.launch else None)
        else:
            row["refused"] = cand
        rows.append(row)
    return rows


def vendor(k: ZooKernel, dry: bool) -> dict[str, Any]:
    if dry or not k.vendor:
        return {"skipped": "dry run" if dry else "no vendor call"}
    from zoo_vendor import vendor_time

    return vendor_time(k.vendor, k.sizes)


def prepare(k: ZooKernel, work: Path, pipelines: list[str]) -> tuple[dict[str, Any], Path | None]:
    """The MEP extracted and every form applied and written as a variant (no build yet)."""
    mep, unfilled, fixes = extract(k, work)
    doc: dict[str, Any] = {"kernel": k.name, "fixes": fixes, "unfilled": unfilled, "forms": []}
    if unfilled:
        doc["error"] = f"FILL-IN left: {unfilled}"
        return doc, None
    doc["forms"] = variants_of(k, mep, pipelines)
    return doc, mep


def build(doc: dict[str, Any], mep: Path, jobs: int) -> list[Any]:
    """Every form's variant built (compilers in parallel); the rows get build_ok, build_s, and the log of a failure."""
    from s2s.mep import evaluate

    todo = [r for r in doc["forms"] if "variant" in r]
    built = evaluate.build_many(mep, [r["variant"] for r in todo], jobs=jobs)
    for r, b in zip(todo, built):
        r["build_ok"], r["build_s"] = b.ok, round(b.seconds, 1)
        if not b.ok:
            r["verdict"], r["log"] = b.failure, (b.log or "; ".join(b.messages))[-1500:]
    return built


def run(doc: dict[str, Any], built: list[Any], k: ZooKernel, dry: bool, until: float) -> None:
    """The vendor call timed, then each built form checked against the original and timed (one at a time)."""
    from s2s.mep import evaluate

    doc["vendor"] = vendor(k, dry)
    vendor_us = doc["vendor"].get("median_us")
    for r, b in zip([r for r in doc["forms"] if "variant" in r], built):
        if dry or not b.ok:
            continue
        if time.time() > until:
            r["verdict"] = "not run (deadline)"
            continue
        m = evaluate.run_built(b)
        r.update(verdict=m.verdict, speedup=m.speedup, messages=list(m.messages)[-4:],
                 original_us=m.ref.median_us if m.ref else None, us=m.var.median_us if m.var else None,
                 spread_us=m.var.spread_us if m.var else None)
        if vendor_us and r.get("us") and m.ok:
            r["vendor_over_ours"] = vendor_us / r["us"]
        print(f"{k.name:14s} {r['form']:45s} {m.verdict:13s} {_f(r.get('us'))} us  original {_f(r.get('original_us'))} us  "
              f"vendor {_f(vendor_us)} us  vendor/ours {_f(r.get('vendor_over_ours'), '{:.2f}')}", flush=True)


def _f(v: Any, fmt: str = "{:.1f}") -> str:
    return "-" if v is None else fmt.format(v)


def table(docs: list[dict[str, Any]]) -> list[str]:
    lines = ["| kernel | form | verdict | ours µs | original µs | speedup | vendor µs | vendor / ours |", "|---|---|---|---|---|---|---|---|"]
    for d in docs:
        v = d.get("vendor", {})
        for r in d.get("forms", []):
            verdict = r.get("verdict") or (f"refused: {r['refused']}" if "refused" in r else ("built" if r.get("build_ok") else "-"))
            lines.append(f"| {d['kernel']} | `{r['pipeline']}` | {verdict[:90]} | {_f(r.get('us'))} | {_f(r.get('original_us'))} | "
                         f"{_f(r.get('speedup'), '{:.2f}')} | {_f(v.get('median_us'))} | {_f(r.get('vendor_over_ours'), '{:.2f}')} |")
        if d.get("error"):
            lines.append(f"| {d['kernel']} | - | {d['error'][:120]} | | | | | |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path, help="where gpu_gemm_forms.json and .md go")
    ap.add_argument("--dry", action="store_true", help="extract, rewrite and build only (no GPU)")
    ap.add_argument("--all-forms", action="store_true", help="every configuration of the three passes' spaces")
    ap.add_argument("--kernels", default=",".join(GEMM_LIKE), help="comma-separated zoo kernels (default: the GEMM-like ones)")
    ap.add_argument("--work", type=Path, default=None, help="where the MEPs go (default OUT/work)")
    ap.add_argument("--deadline", type=float, default=540.0, help="seconds after which no further form is run")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    names = [n.strip() for n in args.kernels.split(",") if n.strip()]
    bad = [n for n in names if n not in GEMM_LIKE or n not in BY_NAME]
    if bad:
        print(f"gpu_gemm_forms: not a GEMM-like zoo kernel: {', '.join(bad)} (known: {', '.join(GEMM_LIKE)})", file=sys.stderr)
        return 2
    until = time.time() + args.deadline
    work = args.work or args.out / "work"
    pipelines = forms(args.all_forms)
    docs: list[dict[str, Any]] = []
    meps: dict[str, Path] = {}
    for n in names:  # extraction and rewriting: one at a time (seconds each)
        try:
            doc, mep = prepare(BY_NAME[n], work, pipelines)
        except Exception as exc:  # noqa: BLE001 - one kernel's failure must not hide the others'
            doc, mep = {"kernel": n, "error": f"{type(exc).__name__}: {exc}"[:400], "forms": []}, None
        docs.append(doc)
        if mep is not None:
            meps[n] = mep
    per = max(1, min(len(pipelines), args.jobs))
    with ThreadPoolExecutor(max_workers=max(1, args.jobs // per)) as pool:  # every kernel's builds at once, `jobs` compilers in all
        builds = dict(zip(meps, pool.map(lambda n: build(next(d for d in docs if d["kernel"] == n), meps[n], per), meps)))
    head = [f"# GEMM-like zoo kernels: each tiled form against cuBLAS ({'dry run, ' if args.dry else ''}"
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit()})", "",
            "In-sample (the zoo is the optimizer's development set). vendor / ours >= 0.50 is within 2x of cuBLAS fp32 (TF32 off).", ""]
    for doc in docs:
        if doc["kernel"] in builds:
            try:
                run(doc, builds[doc["kernel"]], BY_NAME[doc["kernel"]], args.dry, until)
            except Exception as exc:  # noqa: BLE001
                doc["error"] = f"{type(exc).__name__}: {exc}"[:400]
        write_result(args.out, "gpu_gemm_forms", {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit(),
                                                   "dry": args.dry, "forms": pipelines, "kernels": docs}, "\n".join(head + table(docs)))
    print("\n".join(table(docs)))
    failed = [d["kernel"] for d in docs if d.get("error") or any(r.get("build_ok") is False for r in d.get("forms", []))]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
