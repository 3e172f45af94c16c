"""How well the cost model ranked candidates, over many MEPs: per MEP the Spearman rank correlation of predicted and
measured speedups over the verified candidates, the predicted best against the measured best, and the predictions
that were most wrong; over all of them, which passes the model misjudges and in which direction.

    python bench/cost_model_accuracy.py PATH... [--out DIR] [--tag NAME]

Each PATH is an MEP, a directory searched for MEPs (a `history.sqlite` beside a `mep.toml`), or a file written by
`s2s report MEP --json`. Prints the markdown table; with --out writes DIR/cost_model_accuracy[_TAG].{json,md}.
Histories from before predictions were recorded are listed as such. CPU only: it reads histories.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from statistics import median
from typing import Any

from provenance import commit, write_result

OFF = 1.5  # a prediction off by more than this factor (in speedup) counts as wrong


def _is_report(doc: object) -> bool:
    return isinstance(doc, dict) and {"kernel", "candidates", "cost_model"} <= set(doc)


def collect(paths: list[Path]) -> tuple[list[dict[str, Any]], list[str]]:
    """The report JSON of every MEP under `paths` (and of every report file given), and a note per one unreadable."""
    from s2s.base.errors import UserError
    from s2s.optimize.report import report_json

    docs: list[dict[str, Any]] = []
    notes: list[str] = []
    for path in paths:
        if path.is_file():
            try:
                doc = json.loads(path.read_text())
            except (ValueError, UnicodeDecodeError) as exc:
                notes.append(f"{path}: not JSON ({exc})")
                continue
            for d in doc if isinstance(doc, list) else [doc]:  # one report, or a list of them
                if _is_report(d):
                    docs.append(d)
                else:
                    notes.append(f"{path}: not an `s2s report --json` object")
            continue
        found = [path] if (path / "history.sqlite").is_file() else sorted(h.parent for h in path.rglob("history.sqlite"))
        for f in sorted(path.rglob("*.json")) if not found else []:  # a directory of `s2s report --json` files
            try:
                doc = json.loads(f.read_text())
            except (ValueError, UnicodeDecodeError):
                continue
            docs += [d for d in (doc if isinstance(doc, list) else [doc]) if _is_report(d)]
        for mep in found:
            if not (mep / "mep.toml").is_file():
                continue
            try:
                docs.append(report_json(mep))
            except UserError as exc:
                notes.append(f"{mep}: {exc}")
    return docs, notes


def _pipeline(origin: str) -> str:
    """The pass a candidate's last step added, parameters dropped: `pass:a,b{x=1}+repair` -> `b`; `llm:model` -> `llm`."""
    head = origin.split("+repair")[0]
    if not head.startswith("pass:"):
        return head.split(":")[0] or head
    steps, depth, cur = [], 0, ""
    for ch in head[len("pass:"):]:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            steps.append(cur)
            cur = ""
        else:
            cur += ch
    steps.append(cur)
    return steps[-1].split("{")[0]


def summarize(docs: list[dict[str, Any]]) -> dict[str, Any]:
    per_mep, wrong, by_pass = [], [], {}  # type: ignore[var-annotated]
    for d in docs:
        cm = d.get("cost_model")
        row: dict[str, Any] = {"kernel": d["kernel"], "mep": d.get("mep", ""), "candidates": len(d["candidates"])}
        if not cm:
            per_mep.append({**row, "predictions": 0})
            continue
        judged = {j["id"]: j for j in cm["judged"]}
        pb, mb = judged.get(cm.get("predicted_best") or ""), judged.get(cm.get("measured_best") or "")
        row.update(predictions=cm["predicted"], judged=len(judged), spearman=cm["spearman"],
                   predicted_best=cm.get("predicted_best"), predicted_best_speedup=pb["measured_speedup"] if pb else None,
                   measured_best=cm.get("measured_best"), measured_best_speedup=mb["measured_speedup"] if mb else None,
                   predicted_best_rank=cm.get("predicted_best_rank"), side_agreement=cm.get("side_agreement"),
                   model_device=cm.get("model_device"), measured_device=cm.get("measured_device"),
                   regret=(mb["measured_speedup"] / pb["measured_speedup"]) if pb and mb and pb["measured_speedup"] else None)
        per_mep.append(row)
        for j in judged.values():
            ratio = (j["predicted_speedup"] / j["measured_speedup"]) if j.get("predicted_speedup") else None
            entry = {"kernel": d["kernel"], "id": j["id"], "origin": j["origin"], "predicted_us": j["predicted_us"],
                     "measured_us": j["measured_us"], "predicted_speedup": j.get("predicted_speedup"),
                     "measured_speedup": j["measured_speedup"], "wrong_by": j["wrong_by"], "optimistic": j["optimistic"]}
            if j["wrong_by"] >= OFF:
                wrong.append(entry)
            if ratio:
                by_pass.setdefault(_pipeline(j["origin"]), []).append(ratio)
    judged_meps = [r for r in per_mep if r.get("judged")]
    rhos = [r["spearman"] for r in judged_meps if r.get("spearman") is not None]
    passes = {name: {"n": len(rs), "geomean_predicted_over_measured": math.exp(sum(math.log(r) for r in rs) / len(rs)),
                     "wrong": sum(1 for r in rs if max(r, 1 / r) >= OFF)} for name, rs in sorted(by_pass.items())}
    return {
        "meps": len(docs), "with_predictions": sum(1 for r in per_mep if r.get("predictions")),
        "judged_meps": len(judged_meps), "median_spearman": median(rhos) if rhos else None,
        "spearman_defined": len(rhos), "predicted_best_was_best": sum(1 for r in judged_meps if r.get("predicted_best_rank") == 1),
        "median_regret": median([r["regret"] for r in judged_meps if r.get("regret")] or [1.0]) if judged_meps else None,
        "judged_candidates": sum(r.get("judged", 0) for r in per_mep), "wrong_by_threshold": OFF,
        "wrong": sorted(wrong, key=lambda e: -e["wrong_by"]), "by_pass": passes, "per_mep": per_mep,
    }


def _num(v: object, fmt: str = "{:.2f}") -> str:
    return fmt.format(v) if isinstance(v, (int, float)) else "-"


def _x(v: object) -> str:
    return f"{v:.2f}x" if isinstance(v, (int, float)) else "-"


def markdown(s: dict[str, Any], notes: list[str]) -> str:
    out = [f"# Cost model accuracy ({s['meps']} MEPs, {s['with_predictions']} with predictions, commit {commit()})", "",
           f"Over {s['judged_meps']} MEPs with verified, predicted candidates ({s['judged_candidates']} candidates): median "
           f"Spearman {_num(s['median_spearman'], '{:+.2f}')} (defined on {s['spearman_defined']}); the predicted best was the "
           f"measured best on {s['predicted_best_was_best']}; median regret (measured best over the predicted best's "
           f"measured speedup) {_x(s['median_regret'])}.", "",
           "| kernel | MEP | candidates | predicted | verified+predicted | Spearman | predicted best (measured) | measured best "
           "| its rank | side right | regret |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in s["per_mep"]:
        if not r.get("predictions"):
            out.append(f"| {r['kernel']} | {Path(r['mep']).name} | {r['candidates']} | 0 (history without predictions) | | | | | | | |")
            continue
        side = f"{r['side_agreement'][0]}/{r['side_agreement'][1]}" if r.get("side_agreement") else "-"
        out.append(f"| {r['kernel']} | {Path(r['mep']).name} | {r['candidates']} | {r['predictions']} | {r.get('judged', 0)} | "
                   f"{_num(r.get('spearman'), '{:+.2f}')} | {r.get('predicted_best') or '-'} ({_x(r.get('predicted_best_speedup'))}) | "
                   f"{r.get('measured_best') or '-'} ({_x(r.get('measured_best_speedup'))}) | {r.get('predicted_best_rank') or '-'} | "
                   f"{side} | {_x(r.get('regret'))} |")
    out += ["", f"## Predictions off by {s['wrong_by_threshold']}x or more ({len(s['wrong'])})", "",
            "| kernel | candidate | origin | predicted µs | predicted x | measured x | off by | direction |", "|---|---|---|---|---|---|---|---|"]
    for w in s["wrong"][:40]:
        out.append(f"| {w['kernel']} | {w['id']} | `{w['origin']}` | {_num(w['predicted_us'])} | {_num(w['predicted_speedup'])} | "
                   f"{_num(w['measured_speedup'])} | {w['wrong_by']:.1f}x | {'optimistic' if w['optimistic'] else 'pessimistic'} |")
    out += ["", "## By the pass of the candidate's last step (predicted over measured speedup; > 1: the model was optimistic)",
            "", "| pass | candidates | geomean predicted/measured | off by 1.5x or more |", "|---|---|---|---|"]
    for name, p in s["by_pass"].items():
        out.append(f"| {name} | {p['n']} | {p['geomean_predicted_over_measured']:.2f} | {p['wrong']} |")
    if notes:
        out += ["", "Not read:", *(f"- {n}" for n in notes)]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("paths", nargs="+", type=Path, help="MEPs, directories holding MEPs, or `s2s report --json` files")
    ap.add_argument("--out", type=Path, help="write cost_model_accuracy[_TAG].{json,md} here")
    ap.add_argument("--tag", default="")
    args = ap.parse_args(argv)
    for p in args.paths:
        if not p.exists():
            print(f"{p}: no such file or directory", file=sys.stderr)
            return 2
    docs, notes = collect(args.paths)
    if not docs:
        print(f"{args.paths[0]}: no MEP with a history and no `s2s report --json` file found", file=sys.stderr)
        return 2
    s = summarize(docs)
    md = markdown(s, notes)
    print(md, end="")
    if args.out:
        stem = "cost_model_accuracy" + (f"_{args.tag}" if args.tag else "")
        write_result(args.out, stem, {"commit": commit(), **s, "not_read": notes}, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
