"""How far a captured float reduction is from the exact sum of the captured inputs (float64, in numpy).

    python bench/reduction_truth.py MEP --output energy --expr "np.sum(0.5 * u.astype(np.float64) ** 2)"

For an MEP with a capture (`s2s capture`): the inputs recorded before the launch are bound to their parameter
names, `--expr` computes the exact value from them, and it is compared with the value the application's own
kernel wrote (recorded after the launch). Tells whether a variant that disagrees with the original on a
reduction is the less or the more accurate one.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mep")
    ap.add_argument("--output", required=True, help="the reduced output's parameter name")
    ap.add_argument("--expr", required=True, help="numpy expression of the parameters' captured inputs (np in scope)")
    ap.add_argument("--launch", default="1")
    ap.add_argument("--variant-value", type=float, help="the variant's value on the same data, to compare as well")
    args = ap.parse_args()
    d = Path(args.mep) / "capture" / f"launch{args.launch}"
    arrays = {p.name[: -len(".before.npy")]: np.load(p) for p in d.glob("*.before.npy")}
    exact = float(eval(args.expr, {"np": np}, arrays))  # noqa: S307 - the user's own expression, as documented
    app = float(np.load(d / f"{args.output}.after.npy").reshape(-1)[0])
    out = {"mep": str(args.mep), "output": args.output, "exact": exact, "application": app,
           "application_rel_err": abs(app - exact) / abs(exact) if exact else None}
    if args.variant_value is not None:
        out.update(variant=args.variant_value, variant_rel_err=abs(args.variant_value - exact) / abs(exact) if exact else None)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
