"""Which built-in passes produce a candidate for each zoo kernel, and why the others refuse: a dry audit (no GPU).

    python bench/zoo_audit.py [--only a,b] [--work DIR] [--out DIR] [--no-compile] [--jobs N] [--full-build]

Every zoo kernel is extracted into an MEP (bench/gpu_zoo.py's extraction, the catalog's fixes applied); the built-in
proposer then makes its candidates as `s2s optimize` does (patterns off): round 1 is every step of the registry's
search space on the original; round 2 is what the proposer would add on top of the first three round-1 candidates in
the cost model's order, *assuming* they verify (nothing is evaluated). Every round-1 candidate's kernel file is
compile-checked with `nvcc -arch=sm_90 -c` (`--full-build`: the MEP's own harness build of that variant,
s2s.mep.evaluate.build, much slower). Writes OUT/zoo_audit.{json,md} with the commit.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import commit, write_result  # noqa: E402
from zoo_catalog import BY_NAME, ZOO, ZooKernel  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NVCC_C = ["nvcc", "-arch=sm_90", "-O3", "-std=c++17", "-c"]


def extract(k: ZooKernel, work: Path) -> Path:
    from gpu_zoo import extract as zoo_extract

    mep, unfilled, _fixes = zoo_extract(k, work)
    if unfilled:
        raise RuntimeError(f"FILL-IN left: {'; '.join(unfilled)}")
    return mep


def candidates(mep: Path) -> dict[str, Any]:
    """Round 1 (each search-space step alone) and round 2 (on top of the first three, as if they verified)."""
    from s2s.lang.kernel_facts import kernel_facts
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import BuiltinProposer
    from s2s.optimize.registry import search_space

    m = load(mep)
    original = (mep / m.kernel_file).read_bytes()
    kernel = m.kernel.split("::")[-1]
    state = State(manifest=m, original=original, kernel=kernel, dialect=m.dialect,
                  facts=kernel_facts(original, m.dialect, kernel), patterns=[])
    prop = BuiltinProposer()
    r1 = prop.propose(state)
    refusals = dict(prop.refusals)
    state.round = 2
    state.ok_candidates = [(1.0 + 0.1 * (3 - i), c, c.origin[len("pass:"):]) for i, c in enumerate(r1[:3])]
    r2 = prop.propose(state)
    return {"manifest": m, "space": list(search_space()), "round1": r1, "round2": r2, "refusals": refusals}


def compile_check(mep: Path, kernel_file: str, cand: Any, full: bool) -> dict[str, Any]:
    """The candidate's kernel file through nvcc -c (or the MEP's harness build of it): ok, seconds, the first errors."""
    from s2s.optimize.loop import write_variant

    t0 = time.time()
    if full:
        from s2s.mep import evaluate

        write_variant(mep, kernel_file, cand)
        try:
            b = evaluate.build(mep, cand.id)
        except Exception as exc:  # noqa: BLE001 - one variant's failure is data for the table
            return {"ok": False, "seconds": round(time.time() - t0, 1), "log": f"{type(exc).__name__}: {exc}"}
        return {"ok": b.ok, "seconds": round(b.seconds, 1), "log": "" if b.ok else (b.log or "; ".join(b.messages))[-1500:]}
    with tempfile.TemporaryDirectory(prefix="s2s-audit-") as tmp:
        src = Path(tmp) / kernel_file
        src.write_bytes(cand.source)
        for extra in mep.iterdir():  # headers the kernel file includes from the MEP
            if extra.suffix in {".h", ".cuh", ".hpp"} and extra.is_file():
                shutil.copy(extra, Path(tmp) / extra.name)
        p = subprocess.run([*NVCC_C, f"-I{mep}", str(src), "-o", str(Path(tmp) / "k.o")], capture_output=True, text=True)
    log = (p.stdout + p.stderr).strip()
    errors = [ln for ln in log.splitlines() if "error" in ln]
    return {"ok": p.returncode == 0, "seconds": round(time.time() - t0, 1),
            "log": "" if p.returncode == 0 else "\n".join(errors[:6] or log.splitlines()[-6:])[-1500:]}


def audit_one(k: ZooKernel, work: Path, compile_: bool, full: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"kernel": k.name, "family": k.family}
    try:
        mep = extract(k, work)
        c = candidates(mep)
    except Exception as exc:  # noqa: BLE001 - one kernel's failure must not hide the others'
        row["error"] = f"{type(exc).__name__}: {exc}"
        return row
    m = c["manifest"]
    row["launch"] = {"grid": list(m.launch.grid), "block": list(m.launch.block)}
    row["round1"] = []
    for cand in c["round1"]:
        entry: dict[str, Any] = {"pipeline": cand.origin[len("pass:"):], "id": cand.id,
                                 "launch": cand.launch.as_dict() if cand.launch else None}
        if compile_:
            entry["compile"] = compile_check(mep, m.kernel_file, cand, full)
        row["round1"].append(entry)
    row["round2"] = [cand.origin[len("pass:"):] for cand in c["round2"]]
    applied = {e["pipeline"] for e in row["round1"]}
    row["refusals"] = {step: why for step, why in c["refusals"].items() if step in c["space"] and step not in applied}
    return row


def _pass_of(step: str) -> str:
    """A step's pass name; a composed step (a,b,c) is shown whole."""
    return step if "," in step else step.split("{", 1)[0]


def markdown(doc: dict[str, Any]) -> str:
    rows = doc["kernels"]
    n_c = sum(len(r.get("round1", [])) for r in rows)
    bad = [(r["kernel"], e) for r in rows for e in r.get("round1", []) if e.get("compile") and not e["compile"]["ok"]]
    lines = [f"# Zoo audit: the built-in proposer's candidates per zoo kernel ({doc['date']}, commit {doc['commit']})", "",
             "Dry (no GPU): round 1 is every search-space step on the original; round 2 what the proposer adds on the "
             "first three round-1 candidates (cost-model order) *if* they verified. Compile check: "
             f"`{doc['compile_check']}`.", "",
             *([f"The working tree differed from the commit in: {', '.join(doc['uncommitted'])}.", ""] if doc.get("uncommitted") else []),
             f"{len(rows)} kernels, {n_c} round-1 candidates, {len(bad)} compile failures, "
             f"{sum(1 for r in rows if not r.get('round1'))} kernels with no candidate.", "",
             "| kernel | round-1 candidates (pipeline: compiles?) | round 2 | passes refusing (reason) |", "|---|---|---|---|"]
    before = doc.get("before", {}).get("round1", {})
    if before:
        lines[-2:] = ["| kernel | candidates before → after | compile failures before → after | new in round 1 | gone |",
                      "|---|---|---|---|---|"]
        fails = doc["before"].get("fails", {})
        for r in rows:
            now, then = [e["pipeline"] for e in r.get("round1", [])], before.get(r["kernel"], [])
            bad = [e["pipeline"] for e in r.get("round1", []) if not e.get("compile", {}).get("ok", True)]
            lines.append(f"| {r['kernel']} | {len(then)} → {len(now)} | {len(fails.get(r['kernel'], []))} → {len(bad)} | "
                         f"{'<br>'.join(f'`{p}`' for p in now if p not in then)} | {'<br>'.join(f'`{p}`' for p in then if p not in now)} |")
        lines += ["", f"(before: commit {doc['before']['commit']}, {doc['before']['date']})", "",
                  "| kernel | round-1 candidates (pipeline: compiles?) | round 2 | passes refusing (reason) |", "|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['kernel']} | ERROR {r['error']} | | |")
            continue
        cands = "<br>".join(f"`{e['pipeline']}`" + ("" if not e.get("compile") else (" ok" if e["compile"]["ok"] else " **FAILS**"))
                            for e in r["round1"]) or "none"
        applied = {_pass_of(e["pipeline"]) for e in r["round1"]}
        why: dict[str, str] = {}
        for step, reason in r["refusals"].items():
            name = _pass_of(step)
            if name not in applied and name not in why:
                why[name] = reason.split(": ", 1)[1] if reason.startswith(name + ":") else reason
        why = {n: w for n, w in why.items() if w != "no change"}
        refused = "<br>".join(f"{n}: {w}".replace("|", "\\|") for n, w in sorted(why.items()))
        lines.append(f"| {r['kernel']} | {cands} | {len(r['round2'])} | {refused} |")
    if bad:
        lines += ["", "## Compile failures", ""]
        for name, e in bad:
            lines.append(f"- {name} `{e['pipeline']}`: `{e['compile']['log'].splitlines()[0][:300] if e['compile']['log'] else ''}`")
    return "\n".join(lines)


def _attach_before(doc: dict[str, Any], path: str) -> None:
    if path:
        b = json.loads(Path(path).read_text())
        doc["before"] = {"commit": b["commit"], "date": b["date"],
                         "round1": {r["kernel"]: [e["pipeline"] for e in r.get("round1", [])] for r in b["kernels"]},
                         "fails": {r["kernel"]: [e["pipeline"] for e in r.get("round1", []) if not e.get("compile", {}).get("ok", True)]
                                   for r in b["kernels"]}}


def _dirty() -> list[str]:
    """Tracked files that differ from the commit (the audit reads the working tree)."""
    p = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=ROOT)
    return [ln[3:] for ln in p.stdout.splitlines() if ln.strip()]


def _space() -> tuple[str, ...]:
    from s2s.optimize.registry import search_space

    return search_space()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated zoo kernels (default: all)")
    ap.add_argument("--work", default="", help="where the MEPs go (default: a temporary folder)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--no-compile", action="store_true", help="skip the nvcc check of the candidates")
    ap.add_argument("--full-build", action="store_true", help="the MEP's harness build of each variant instead of nvcc -c")
    ap.add_argument("--jobs", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    ap.add_argument("--stem", default="zoo_audit")
    ap.add_argument("--before", default="", help="an earlier audit's JSON: the table then shows candidates before → after")
    ap.add_argument("--rerender", action="store_true", help="only re-write OUT/STEM.md (and --before) from OUT/STEM.json")
    args = ap.parse_args()
    if args.rerender:
        doc = json.loads((Path(args.out) / f"{args.stem}.json").read_text())
        _attach_before(doc, args.before)
        write_result(Path(args.out), args.stem, doc, markdown(doc))
        return 0
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        print(f"zoo_audit: unknown zoo kernel(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    kernels = [BY_NAME[n] for n in names] if names else list(ZOO)
    tmp = None if args.work else tempfile.TemporaryDirectory(prefix="s2s-zoo-audit-")
    work = Path(args.work or tmp.name)  # type: ignore[union-attr]
    compile_ = not args.no_compile and shutil.which("nvcc") is not None
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(lambda k: audit_one(k, work, compile_, args.full_build), kernels))
    check = "none" if not compile_ else ("s2s.mep.evaluate.build (harness)" if args.full_build else " ".join(NVCC_C) + " KERNEL_FILE")
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit(), "uncommitted": _dirty(),
           "search_space": list(_space()), "compile_check": check, "kernels": rows}
    _attach_before(doc, args.before)
    md = markdown(doc)
    write_result(Path(args.out), args.stem, doc, md)
    print(md)
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
