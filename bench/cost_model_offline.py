"""The cost model re-judged offline on the zoo's real H200 measurements: before and after a change to the model.

    python bench/cost_model_offline.py [--results DIR] [--before REV] [--work DIR] [--out DIR]

Measurements come from every MEP history (`history.sqlite`) under DIR (default bench/results/gpu-zoo) and, where a
run kept only reports, from the candidate table of each `report.md`. Each candidate's source is made again: the zoo
kernel is extracted at this checkout and the candidate's pipeline applied (s2s.optimize.proposers.builtin); only a
candidate whose re-made id (or, from a history, source sha256) equals the recorded one is judged, so the model reads
exactly the text that was timed. Candidates the loop repaired (`+repair`) or an LLM wrote are not re-made.
Both models then predict every re-made candidate and the original with the MEP's own launch and scalars: "before" is
s2s/optimize/cost.py at REV (default HEAD), "after" the working tree's; "after" also gets the original's Nsight
Compute profile where the history holds one (meta `ncu:original`), as the optimize loop passes it.
Per MEP: Spearman of predicted and measured speedups, the measured speedup of the candidate each model orders first
(`cost.order`, the proposer's ordering) against the measured best, and per candidate whether the model called the
side (faster or slower than the original) right. In-sample: the zoo is the optimizer's development set, and the
measured candidates are the ones the model at the run's commit chose to evaluate.
Writes OUT/cost_model_offline.{json,md} with the commit. CPU only.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import commit, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
_ROW = re.compile(r"^\| *\d+ *\| *(v[0-9a-f]{10}) *\| *`([^`]*)` *\| *([\w-]+) *\| *([0-9.]+)x *\|")


def measured_sets(results: Path) -> list[dict[str, Any]]:
    """One entry per MEP that was run: kernel, where, and its verified candidates {id, origin, speedup, sha}."""
    out: list[dict[str, Any]] = []
    for rep in sorted(results.rglob("reports/*")):
        if not rep.is_dir():
            continue
        run = str(rep.parent.parent.relative_to(results))
        hist, md = rep / "history.sqlite", rep / "report.md"
        entry: dict[str, Any] = {"kernel": rep.name, "run": run, "profile": None, "candidates": []}
        if hist.is_file():
            entry["source"] = "history"
            con = sqlite3.connect(f"file:{hist}?immutable=1", uri=True)  # immutable: no -wal/-shm beside a committed result
            try:
                for cid, origin, sp, sha in con.execute(
                        "select id, origin, speedup, source_sha from candidates where status = 'ok' and speedup > 0"):
                    entry["candidates"].append({"id": cid, "origin": origin, "speedup": float(sp), "sha": sha})
                row = con.execute("select value from meta where key = 'ncu:original'").fetchone()
            finally:
                con.close()
            prof = json.loads(row[0]) if row else None
            entry["profile"] = prof if isinstance(prof, dict) and "error" not in prof else None
        elif md.is_file():
            entry["source"] = "report.md"
            for line in md.read_text().splitlines():
                m = _ROW.match(line)
                if m and m.group(3) == "ok":
                    entry["candidates"].append({"id": m.group(1), "origin": m.group(2), "speedup": float(m.group(4)), "sha": None})
        else:
            continue
        out.append(entry)
    return out


def load_cost(rev: str) -> ModuleType:
    """s2s/optimize/cost.py as it was at `rev`, imported under another name beside the working tree's."""
    text = subprocess.run(["git", "show", f"{rev}:s2s/optimize/cost.py"], capture_output=True, text=True, check=True,
                          cwd=ROOT).stdout
    path = Path(tempfile.mkdtemp(prefix="s2s-cost-")) / "cost_before.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("s2s_cost_before", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def _state(mep: Path) -> Any:
    from s2s.lang.kernel_facts import kernel_facts
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    m = load(mep)
    original = (mep / m.kernel_file).read_bytes()
    kernel = m.kernel.split("::")[-1]
    return State(manifest=m, original=original, kernel=kernel, dialect=m.dialect,
                 facts=kernel_facts(original, m.dialect, kernel), patterns=[])


def remake(entry: dict[str, Any], state: Any) -> tuple[list[tuple[Any, float]], list[str]]:
    """(candidate, measured speedup) for each recorded candidate whose text is made again exactly; why the rest are not."""
    from s2s.optimize.candidate import Candidate
    from s2s.optimize.proposers.builtin import apply_pipeline

    made, missed = [], []
    for c in entry["candidates"]:
        if not c["origin"].startswith("pass:") or "+repair" in c["origin"]:
            missed.append(f"{c['id']} `{c['origin']}`: not a plain pipeline")
            continue
        got = apply_pipeline(c["origin"][len("pass:"):], state)
        if not isinstance(got, Candidate):
            missed.append(f"{c['id']} `{c['origin']}`: {got}")
        elif got.id == c["id"] or (c["sha"] and got.source_sha == c["sha"]):
            made.append((got, c["speedup"]))
        else:
            missed.append(f"{c['id']} `{c['origin']}`: the pass now writes other text")
    return made, missed


def judge(cost: ModuleType, state: Any, made: list[tuple[Any, float]]) -> dict[str, Any]:
    """One model on one MEP's re-made candidates."""
    from s2s.optimize.report_data import spearman

    base = cost.predict_candidate(None, state)
    rows = []
    for c, measured in made:
        p = cost.predict_candidate(c, state)
        pred = base.seconds / p.seconds if base is not None and p is not None and p.seconds > 0 else None
        rows.append({"id": c.id, "origin": c.origin, "measured": measured, "predicted": pred,
                     "side_right": None if pred is None else (pred > 1) == (measured > 1)})
    ordered = [c.id for c in cost.order([c for c, _ in made], state)]
    speed = {c.id: m for c, m in made}
    pairs = [(r["predicted"], r["measured"]) for r in rows if r["predicted"] is not None]
    best = max(speed.values())
    first = speed[ordered[0]]
    logs = [abs(math.log(p / m)) for p, m in pairs if p > 0 and m > 0]
    return {"original_us": base.seconds * 1e6 if base else None, "candidates": rows, "order": ordered,
            "spearman": spearman([p for p, _ in pairs], [m for _, m in pairs]),
            "first": ordered[0], "first_measured": first, "best_measured": best, "regret": best / first,
            "best_position": 1 + next(i for i, k in enumerate(ordered) if speed[k] == best),
            "side_right": sum(1 for r in rows if r["side_right"]), "side_judged": sum(1 for r in rows if r["side_right"] is not None),
            "median_log_error": median(logs) if logs else None}


ROUND1 = ("jacobi2d", "heat3d_zloop", "laplace3d", "conv2d_3x3", "gemm_naive", "syrk")


def round1_order(cost: ModuleType, state: Any, cands: list[Any]) -> list[str]:
    """The first three round-1 candidates' pipelines in `cost`'s order (patterns off, no profile)."""
    return [c.origin[len("pass:"):] for c in cost.order(cands, state)[:3]]


def _profile(d: dict[str, Any] | None) -> Any:
    from s2s.mep.profile_ncu import Profile

    try:
        return Profile(**d) if d else None
    except TypeError:
        return None


def summary(meps: list[dict[str, Any]], side: str) -> dict[str, Any]:
    judged = [m[side] for m in meps if m.get(side)]
    multi = [j for m, j in zip([m for m in meps if m.get(side)], judged) if len(m["made"]) >= 2]
    rhos = [j["spearman"] for j in multi if j["spearman"] is not None]
    logs = [j["median_log_error"] for j in judged if j["median_log_error"] is not None]
    return {"meps": len(judged), "meps_with_2_or_more": len(multi), "median_spearman": median(rhos) if rhos else None,
            "spearman_defined": len(rhos),
            "first_was_best": sum(1 for j in multi if j["first_measured"] >= j["best_measured"]),
            "geomean_regret": math.exp(sum(math.log(j["regret"]) for j in multi) / len(multi)) if multi else None,
            "side_right": sum(j["side_right"] for j in judged), "side_judged": sum(j["side_judged"] for j in judged),
            "median_log_error": median(logs) if logs else None}


def paired(meps: list[dict[str, Any]], one: str, two: str) -> dict[str, Any]:
    """The two models on the same ground: candidates both predicted, MEPs where both have a Spearman."""
    side = {one: 0, two: 0}
    logs: dict[str, list[float]] = {one: [], two: []}
    rhos: dict[str, list[float]] = {one: [], two: []}
    n = 0
    for m in meps:
        if not m.get(one) or not m.get(two):
            continue
        if m[one]["spearman"] is not None and m[two]["spearman"] is not None:
            for k in (one, two):
                rhos[k].append(m[k]["spearman"])
        for r1, r2 in zip(m[one]["candidates"], m[two]["candidates"]):
            if r1["predicted"] is None or r2["predicted"] is None:
                continue
            n += 1
            for k, r in ((one, r1), (two, r2)):
                side[k] += bool(r["side_right"])
                if r["predicted"] > 0 and r["measured"] > 0:
                    logs[k].append(abs(math.log(r["predicted"] / r["measured"])))
    return {"candidates": n, "meps_with_spearman": len(rhos[one]),
            **{k: {"side_right": side[k], "median_spearman": median(rhos[k]) if rhos[k] else None,
                   "median_log_error": median(logs[k]) if logs[k] else None} for k in (one, two)}}


def _f(v: object, fmt: str = "{:.2f}") -> str:
    return fmt.format(v) if isinstance(v, (int, float)) else "-"


def markdown(doc: dict[str, Any]) -> str:
    b, am, a = doc["summary"]["before"], doc["summary"]["after_model"], doc["summary"]["after"]
    out = [f"# The cost model offline on the zoo's H200 measurements (commit {doc['commit']}, before = cost.py at {doc['before_rev']})",
           "", "**In-sample**: the zoo is the optimizer's development set; the measured candidates are the ones the model at each "
           "run's commit chose to evaluate (a few per MEP), so this judges the ordering among those, not the whole search space. "
           "Every candidate's text was made again at this checkout and matches the recorded id or source hash; nothing here was "
           "run on a GPU now." + (f" The working tree differed from the commit in: {', '.join(doc['uncommitted'])}."
                                  if doc["uncommitted"] else ""), "",
           f"{doc['meps_read']} MEPs read ({doc['candidates_recorded']} verified candidates); {b['meps']} with at least one "
           f"candidate re-made exactly ({doc['candidates_made']} candidates), {b['meps_with_2_or_more']} with two or more.", "",
           f"{doc['profiled_meps']} of them hold an ncu profile of the original: only there can \"after + profile\" differ "
           f"from \"after, model only\"; the profile changed the order of {doc['profile_changed']} of them.", "",
           "| | before | after, model only | after + profile |", "|---|---|---|---|",
           f"| median Spearman (MEPs with 2+; defined on {b['spearman_defined']} / {am['spearman_defined']} / {a['spearman_defined']}) | "
           f"{_f(b['median_spearman'], '{:+.2f}')} | {_f(am['median_spearman'], '{:+.2f}')} | {_f(a['median_spearman'], '{:+.2f}')} |",
           f"| the first in the model's order was the measured best (of {b['meps_with_2_or_more']}) | {b['first_was_best']} | "
           f"{am['first_was_best']} | {a['first_was_best']} |",
           f"| geomean regret (measured best / measured speedup of the first ordered) | {_f(b['geomean_regret'])}x | "
           f"{_f(am['geomean_regret'])}x | {_f(a['geomean_regret'])}x |",
           f"| side called right (faster or slower than the original) | {b['side_right']}/{b['side_judged']} | "
           f"{am['side_right']}/{am['side_judged']} | {a['side_right']}/{a['side_judged']} |",
           f"| median per-MEP median abs(log(predicted/measured speedup)) | {_f(b['median_log_error'])} | "
           f"{_f(am['median_log_error'])} | {_f(a['median_log_error'])} |",
           "", f"On the same ground (the {doc['paired']['candidates']} candidates both predicted; the "
           f"{doc['paired']['meps_with_spearman']} MEPs where both have a Spearman): side right "
           f"{doc['paired']['before']['side_right']} → {doc['paired']['after']['side_right']}, median Spearman "
           f"{_f(doc['paired']['before']['median_spearman'], '{:+.2f}')} → {_f(doc['paired']['after']['median_spearman'], '{:+.2f}')}, "
           f"median abs(log(predicted/measured)) {_f(doc['paired']['before']['median_log_error'])} → "
           f"{_f(doc['paired']['after']['median_log_error'])}. The after model predicts more candidates (the kernel file's "
           "#defines bound loops it could not count before), so the full-table counts are over more candidates.",
           "", "## Round 1 on the kernels the issue names: the first three of every search-space step, before → after",
           "", "(No measurement: what the loop would evaluate first; the H200 measured stencil-tiling 0.56-0.62x on jacobi2d and "
           "conv2d_3x3, stencil-streaming 0.23-0.47x on heat3d_zloop and laplace3d.)", "",
           "| kernel | round-1 candidates | first three before | first three after |", "|---|---|---|---|"]
    for r in doc["round1_first3"]:
        out.append(f"| {r['kernel']} | {r['candidates']} | {'<br>'.join(f'`{x}`' for x in r['before'])} | "
                   f"{'<br>'.join(f'`{x}`' for x in r['after'])} |")
    out += ["", "## Per MEP", "",
           "| kernel | run | profile | re-made / verified | Spearman before → after | first ordered (measured x) before → after + profile | best measured |",
           "|---|---|---|---|---|---|---|"]
    for m in doc["meps"]:
        if not m.get("before"):
            out.append(f"| {m['kernel']} | {m['run']} | - | 0 / {len(m['recorded'])} | | | |")
            continue
        bj, aj = m["before"], m["after"]
        origin = {r["id"]: r["origin"][len("pass:"):] for r in bj["candidates"]}
        prof = m.get("profile")
        ptxt = f"{prof['limiter']}, occ {prof['occupancy_pct']:.0f}%, {prof['dram_gbs']:.0f} GB/s" if prof else "-"
        out.append(f"| {m['kernel']} | {m['run']} | {ptxt} | {len(m['made'])} / {len(m['recorded'])} | "
                   f"{_f(bj['spearman'], '{:+.2f}')} → {_f(aj['spearman'], '{:+.2f}')} | "
                   f"`{origin[bj['first']]}` ({bj['first_measured']:.2f}x) → `{origin[aj['first']]}` ({aj['first_measured']:.2f}x) | "
                   f"{bj['best_measured']:.2f}x |")
    out += ["", "## Per candidate: predicted speedup before → after, measured", "",
            "| kernel | run | pipeline | predicted before | predicted after | measured |", "|---|---|---|---|---|---|"]
    for m in doc["meps"]:
        if not m.get("before"):
            continue
        after = {r["id"]: r for r in m["after"]["candidates"]}
        for r in m["before"]["candidates"]:
            out.append(f"| {m['kernel']} | {m['run']} | `{r['origin'][len('pass:'):]}` | {_f(r['predicted'])}x | "
                       f"{_f(after[r['id']]['predicted'])}x | {r['measured']:.2f}x |")
    missed = [(m["kernel"], m["run"], x) for m in doc["meps"] for x in m["missed"]]
    if missed:
        out += ["", f"## Not re-made ({len(missed)})", ""] + [f"- {k} ({r}): {x}" for k, r, x in missed]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "gpu-zoo")
    ap.add_argument("--before", default="HEAD", help="the git revision whose cost.py is 'before'")
    ap.add_argument("--work", type=Path, help="where the zoo MEPs are extracted (default: a temporary folder)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args(argv)
    if not args.results.is_dir():
        print(f"{args.results}: no such directory", file=sys.stderr)
        return 2
    from gpu_zoo import extract
    from zoo_catalog import BY_NAME

    from s2s.optimize import cost as after_cost

    before_cost = load_cost(args.before)
    work = args.work or Path(tempfile.mkdtemp(prefix="s2s-offline-"))
    states: dict[str, Any] = {}
    meps = []
    sets = measured_sets(args.results)
    for entry in sets:
        row: dict[str, Any] = {"kernel": entry["kernel"], "run": entry["run"], "from": entry["source"],
                               "profile": entry["profile"], "recorded": entry["candidates"], "made": [], "missed": []}
        meps.append(row)
        k = BY_NAME.get(entry["kernel"])
        if k is None or not entry["candidates"]:
            row["missed"].append("not a zoo kernel" if k is None else "no verified candidate")
            continue
        if k.name not in states:
            mep, _unfilled, _fixes = extract(k, work)
            states[k.name] = _state(mep)
        state = states[k.name]
        made, row["missed"] = remake(entry, state)
        row["made"] = [c.id for c, _ in made]
        if not made:
            continue
        state.feedback = {}
        row["before"] = judge(before_cost, state, made)
        row["after_model"] = judge(after_cost, state, made)
        prof = _profile(entry["profile"])
        state.feedback = {"original": prof} if prof is not None else {}
        row["after"] = judge(after_cost, state, made)
        state.feedback = {}
    from s2s.optimize.proposers.builtin import BuiltinProposer

    first3 = []
    for name in ROUND1:  # the round-1 order on the kernels the issue names: every search-space step on the original
        if name not in states:
            mep, _unfilled, _fixes = extract(BY_NAME[name], work)
            states[name] = _state(mep)
        state = states[name]
        state.feedback = {}
        cands = BuiltinProposer().propose(state)
        first3.append({"kernel": name, "candidates": len(cands), "before": round1_order(before_cost, state, cands),
                       "after": round1_order(after_cost, state, cands)})
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True,
                           cwd=ROOT).stdout.split("\n")
    doc = {"commit": commit(), "uncommitted": [ln[3:] for ln in dirty if ln.strip()], "round1_first3": first3, "before_rev": subprocess.run(["git", "rev-parse", "--short", args.before], capture_output=True,
                                                            text=True, cwd=ROOT).stdout.strip(),
           "profile_changed": sum(1 for m in meps if m.get("after") and m["after"]["order"] != m["after_model"]["order"]),
           "in_sample": True, "meps_read": len(sets), "profiled_meps": sum(1 for m in meps if m.get("after") and m["profile"]), "candidates_recorded": sum(len(e["candidates"]) for e in sets),
           "candidates_made": sum(len(m["made"]) for m in meps),
           "summary": {"before": summary(meps, "before"), "after_model": summary(meps, "after_model"),
                       "after": summary(meps, "after")}, "paired": paired(meps, "before", "after"), "meps": meps}
    md = markdown(doc)
    print(md, end="")
    write_result(args.out, "cost_model_offline", doc, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
