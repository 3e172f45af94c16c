"""The built-in proposer's first round on stencil MEPs, without a GPU: which candidates each pass generates, in the
order the cost model puts them, and why the stencil passes refuse where they do.

    python bench/stencil_candidates.py OUT_DIR MEP [MEP ...]     # e.g. the MEPs `bench/gpu_zoo.py --dry` extracts

Round 2 composes one more pass onto round 1's verified candidates; here every round-1 candidate is assumed verified,
so the listing also shows the two-pass pipelines the stencil passes open (delinearize-2d then stencil-tiling).
Writes OUT_DIR/stencil_candidates.{json,md}.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from s2s.lang.kernel_facts import kernel_facts  # noqa: E402
from s2s.mep.manifest import load  # noqa: E402
from s2s.optimize.cost import predict_candidate  # noqa: E402
from s2s.optimize.proposers.base import State  # noqa: E402
from s2s.optimize.proposers.builtin import BuiltinProposer  # noqa: E402

MINE = ("stencil-tiling", "stencil-streaming")


def one(mep: Path) -> dict[str, object]:
    m = load(mep)
    source = (mep / m.kernel_file).read_bytes()
    dialect = "opencl" if m.backend == "opencl" else "cuda"
    state = State(manifest=m, original=source, kernel=m.kernel, dialect=dialect, facts=kernel_facts(source, dialect, m.kernel))
    proposer = BuiltinProposer()
    first = proposer.propose(state)
    rows = []
    for c in first:
        p = predict_candidate(c, state)
        rows.append({"origin": c.origin, "launch": [c.launch.grid, c.launch.block] if c.launch else None,
                     "predicted_us": round(p.seconds * 1e6, 1) if p is not None else None})
    state.round = 2
    state.ok_candidates = [(1.0, c, c.origin.removeprefix("pass:")) for c in first]
    second = [c.origin for c in proposer.propose(state) if any(n in c.origin for n in MINE)]
    base = predict_candidate(None, state)
    return {"kernel": m.kernel, "mep": str(mep), "original_predicted_us": round(base.seconds * 1e6, 1) if base else None,
            "round1": rows, "round2_stencil": second,
            "refusals": {k: v.split(": ", 1)[-1] for k, v in proposer.refusals.items() if any(n in k for n in MINE) and "," not in k}}


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    results = [one(Path(p)) for p in sys.argv[2:]]
    lines = [f"# Round-1 candidates of the built-in proposer on stencil MEPs ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
             "", "Cost-model order (H200 numbers, predicted us); no GPU was used.", "",
             "| kernel | round 1 (in order) | stencil passes | refusals of the stencil passes | round 2 with a stencil pass |",
             "|---|---|---|---|---|"]
    for r in results:
        r1 = r["round1"]
        assert isinstance(r1, list)
        order = ", ".join(f"{x['origin'].removeprefix('pass:')} ({x['predicted_us']})" for x in r1)
        mine = ", ".join(x["origin"].removeprefix("pass:") for x in r1 if any(n in x["origin"] for n in MINE)) or "-"
        refusals = "; ".join(f"{k}: {v}" for k, v in r["refusals"].items()) or "-"  # type: ignore[attr-defined]
        second = ", ".join(s.removeprefix("pass:") for s in r["round2_stencil"]) or "-"  # type: ignore[attr-defined]
        lines.append(f"| {r['kernel']} (original {r['original_predicted_us']}) | {order} | {mine} | {refusals} | {second} |")
    (out / "stencil_candidates.json").write_text(json.dumps(results, indent=1, default=str))
    (out / "stencil_candidates.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
