"""What a CUDA/HIP harness build costs, whole against linking the prebuilt run (s2s/mep/backends/harness_runtime.py):
MEPs extracted from our own samples, each built as the reference and as VARIANTS variants (the kernel with one line
added, as the optimizer's candidates differ), first whole (S2S_PREBUILT_RUNTIME=0), then with a fresh build cache
(its one compile of the run reported apart). Prints the ratio of the median variant build; where a GPU is present,
each build also runs (`--no-time`) and the two builds of a variant must give the same verdict.

    python3 bench/harness_build.py OUT_DIR [--variants 3]

Writes OUT_DIR/harness_build.json and .md. The nvcc is the one on PATH (host code at -O3, as users build; not the test
suite's -O0 wrapper). No GPU needed; label: in-sample (our samples).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEPS = (("samples/heat3d_cuda", "stencil7"), ("samples/heat3d_cuda", "matvec_rows"),
        ("samples/heat3d_cuda", "reduce_energy"), ("samples/hip_matrix", "matmul"))


def _kernels(tree: Path) -> list[str]:
    from s2s.scan.tree import scan_tree

    return [k.name for k in scan_tree(tree).kernels]


def _builds(mep: Path, variants: list[str], gpu: bool) -> list[dict[str, object]]:
    from s2s.mep.evaluate import build, run_built

    out = []
    for v in [None, *variants]:
        shutil.rmtree(mep / "build" / (v or "ref"), ignore_errors=True)
        t0 = time.monotonic()
        b = build(mep, v)
        row: dict[str, object] = {"variant": v or "reference", "ok": b.ok, "seconds": round(time.monotonic() - t0, 3),
                                  "prebuilt": "-DS2S_PREBUILT_RUNTIME" in b.command}
        if gpu and b.ok:
            row["verdict"] = run_built(b, time=False).verdict
        out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--variants", type=int, default=3)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from s2s.extract.mep_writer import make_mep
    from s2s.mep.backends import harness_runtime as hr
    from s2s.mep.manifest import load

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gpu = shutil.which("nvidia-smi") is not None and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="s2s-harness-build-") as tmp:
        cache = Path(tmp) / "cache"
        once: list[float] = []
        for tree, kernel in MEPS:
            if kernel not in _kernels(ROOT / tree):
                rows.append({"mep": f"{tree}:{kernel}", "skipped": "kernel not found"})
                continue
            mep = Path(tmp) / kernel
            make_mep(str(ROOT / tree), kernel, str(mep))
            m = load(mep)
            if m.unfilled():
                rows.append({"mep": f"{tree}:{kernel}", "skipped": "values to fill in: " + "; ".join(m.unfilled())})
                continue
            src = (mep / m.kernel_file).read_text()
            names = [f"v{i}" for i in range(1, args.variants + 1)]
            for i, v in enumerate(names):
                (mep / "variants" / v).mkdir(parents=True, exist_ok=True)
                (mep / "variants" / v / m.kernel_file).write_text(src + f"\n// variant {i + 1}\n")
            os.environ[hr.SWITCH_ENV] = "0"
            whole = _builds(mep, names, gpu)
            os.environ[hr.SWITCH_ENV] = "1"
            os.environ[hr.CACHE_ENV] = str(cache)
            t0 = time.monotonic()
            lib, lib_s = hr.prebuilt(*_runtime_args(mep))
            once.append(round(time.monotonic() - t0, 3))
            pre = _builds(mep, names, gpu)
            same = all(a.get("verdict") == b.get("verdict") for a, b in zip(whole, pre))
            wv = statistics.median(float(r["seconds"]) for r in whole[1:])  # type: ignore[arg-type]
            pv = statistics.median(float(r["seconds"]) for r in pre[1:])  # type: ignore[arg-type]
            rows.append({"mep": f"{tree}:{kernel}", "backend": m.backend, "whole": whole, "prebuilt": pre,
                         "library": str(lib.name) if lib else None, "library_compile_s": once[-1],
                         "median_variant_whole_s": wv, "median_variant_prebuilt_s": pv,
                         "ratio": round(wv / pv, 2) if pv else None, "same_verdicts": same if gpu else None})
    done = [r for r in rows if "ratio" in r and r["ratio"]]
    from statistics import geometric_mean

    summary = {"what": "CUDA/HIP harness build seconds, whole vs linking the prebuilt run", "label": "in-sample (our samples)",
               "date": time.strftime("%Y-%m-%d"), "commit": _commit(), "machine": platform.node(), "cpus": os.cpu_count(),
               "gpu": gpu, "nvcc": shutil.which("nvcc"), "variants_per_mep": args.variants, "meps": rows,
               "geomean_variant_ratio": round(geometric_mean([float(r["ratio"]) for r in done]), 2) if done else None}
    (out / "harness_build.json").write_text(json.dumps(summary, indent=1))
    lines = [f"# Harness builds, whole vs prebuilt run ({summary['date']}, {summary['commit']}, {summary['cpus']} CPUs, "
             f"GPU: {'yes' if gpu else 'no'}; in-sample)", "",
             "| MEP | backend | reference whole s | reference prebuilt s | median variant whole s | median variant prebuilt s "
             "| ratio | run compiled once s | same verdicts |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "ratio" not in r:
            lines.append(f"| {r['mep']} | | | | | | | | {r.get('skipped', '')} |")
            continue
        lines.append(f"| {r['mep']} | {r['backend']} | {r['whole'][0]['seconds']} | {r['prebuilt'][0]['seconds']} | "  # type: ignore[index]
                     f"{r['median_variant_whole_s']} | {r['median_variant_prebuilt_s']} | {r['ratio']}x | "
                     f"{r['library_compile_s']} | {r['same_verdicts']} |")
    lines += ["", f"Geomean of the variant-build ratio: **{summary['geomean_variant_ratio']}x**. The run is compiled once "
              "per compiler and relevant flags (the first MEP's column; later MEPs find it)."]
    (out / "harness_build.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def _runtime_args(mep: Path) -> tuple[list[str], list[str], list[str], Path]:
    from s2s.mep.backends import get_backend
    from s2s.mep.manifest import load

    m = load(mep)
    be = get_backend(m.backend)
    return be.compiler(), be.extra_flags(mep), list(m.flags), mep  # type: ignore[attr-defined]


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
