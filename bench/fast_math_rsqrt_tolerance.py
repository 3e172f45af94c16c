"""Does fast-math's `1.0f / sqrtf(x)` -> `rsqrtf(x)` stay within an MEP's tolerance on cp's cenergy? CPU emulation.

    python bench/fast_math_rsqrt_tolerance.py OUT_DIR [--atoms 4000] [--rows-step 4]

cenergy's shape at the Parboil MEP's sizes: a 512 x 512 grid, spacing 0.1, 4000 atoms (x, y, z, w) drawn from
uniform [-1, 1] as the harness fills a __constant__ table. rsqrtf is modelled as the exact 1/sqrt with a relative
error drawn per evaluation from [-2, 2] ulp (CUDA's documented bound for rsqrtf), the reference as IEEE float32
`1.0f / sqrtf(x)`; both accumulate in float32 in atom order. Each output is held to the harness's rule,
err <= rtol * |ref| + atol * max|ref| (rtol 1e-3, atol 1e-4), and NaN/Inf must match where the reference has them.
Writes OUT_DIR/fast_math_rsqrt_tolerance.{json,md}. Numbers from the GPU itself come from `s2s run` on the MEP.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--atoms", type=int, default=4000)
    ap.add_argument("--rows-step", type=int, default=4, help="every n-th grid row (all columns, the origin included)")
    args = ap.parse_args()
    rng = np.random.default_rng(1234)
    atoms = rng.uniform(-1, 1, size=(args.atoms, 4)).astype(np.float32)
    xs, ys = np.meshgrid(np.arange(512), np.arange(0, 512, args.rows_step))
    px = (np.float32(0.1) * xs.astype(np.float32)).ravel()
    py = (np.float32(0.1) * ys.astype(np.float32)).ravel()
    ref, fast, ulp = np.zeros_like(px), np.zeros_like(px), 2.0 ** -23
    with np.errstate(invalid="ignore", divide="ignore"):
        for a in atoms:
            dx, dy = px - a[0], py - a[1]
            s = dx * dx + dy * dy + a[2]
            ref += a[3] * (np.float32(1.0) / np.sqrt(s))
            approx = 1.0 / np.sqrt(s.astype(np.float64)) * (1 + rng.uniform(-2, 2, size=s.shape) * ulp)
            fast += a[3] * approx.astype(np.float32)
    fin = np.isfinite(ref)
    same_nonfinite = bool(np.array_equal(np.isnan(ref), np.isnan(fast)) and np.array_equal(np.isinf(ref), np.isinf(fast)))
    maxref = float(np.abs(ref[fin]).max())
    err = np.abs(fast[fin].astype(np.float64) - ref[fin])
    bound = 1e-3 * np.abs(ref[fin]) + 1e-4 * maxref
    doc = {"points": int(ref.size), "atoms": args.atoms, "nonfinite_reference": int((~fin).sum()), "same_nonfinite": same_nonfinite,
           "max_abs_ref": maxref, "max_rel_err": float((err / np.abs(ref[fin])).max()),
           "median_rel_err": float(np.median(err / np.abs(ref[fin]))), "worst_err_over_bound": float((err / bound).max()),
           "failing": int((err > bound).sum())}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fast_math_rsqrt_tolerance.json").write_text(json.dumps(doc, indent=1) + "\n")
    md = ["# fast-math's rsqrtf on cenergy's shape, emulated in float32", "", *(f"- {k}: {v}" for k, v in doc.items())]
    (args.out / "fast_math_rsqrt_tolerance.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0 if doc["failing"] == 0 and same_nonfinite else 1


if __name__ == "__main__":
    raise SystemExit(main())
