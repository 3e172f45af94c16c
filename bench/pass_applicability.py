"""Which built-in passes apply to real code: round-1 candidate generation, as the optimizer does it, on every kernel.

    python bench/pass_applicability.py APPS_DIR OUT_DIR [--list FILE]

For every application directory under APPS_DIR (or those named in FILE, one a line), the tree is scanned with s2s's
scanner (s2s.scan.tree.scan_tree), every kernel found is extracted into a temporary MEP (s2s.extract.mep_writer.make_mep)
and the built-in proposer's round 1 is run on it (BuiltinProposer.propose with round 1 and no inherited patterns, the
device the H200 default, as `s2s optimize` does before anything is measured). Each step of the round-1 search space
belongs to the pass whose `space` declares it (a `normalize,STEP` step to STEP's pass, and to `normalize`). Per
kernel: the passes with a step that produced a rewrite (an applied candidate, whether or not the cost model's
speculative-step rule then kept it) and, for each refused pass, its distinct refusal reasons. Passes with no
round-1 steps (an empty `space`) are also run once alone with their defaults (`run_pass`), reported apart.

A kernel that fails to extract, or an application that fails to scan, is counted as such (never dropped).
Writes OUT_DIR/pass_applicability.json and OUT_DIR/pass_applicability.md.
"""
from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Passes that change no algorithm: they apply to any kernel without recognizing its computation (qualifiers, launch
# shape, unrolling, arithmetic precision/intrinsics, a loop-invariant load, how many points a thread computes).
GENERIC = ("fast-math", "hoist-invariants", "launch-config", "loop-unroll", "precision-hygiene", "restrict-const",
           "thread-coarsen")
GENERIC_WHY = {
    "fast-math": "single-precision math through the fast intrinsics: any float kernel",
    "hoist-invariants": "a repeated loop-invariant load read once: any loop",
    "launch-config": "another block shape, the kernel text unchanged",
    "loop-unroll": "`#pragma unroll` before innermost loops",
    "precision-hygiene": "float literals and float math functions in float kernels",
    "restrict-const": "`const` / `__restrict__` on pointer parameters",
    "thread-coarsen": "each thread computes several points of the same computation (a schedule, not an algorithm)",
}
NORMALIZE = "normalize"
LABEL = "development corpus"
MAX_REASONS, REASON_CHARS = 3, 400  # a refused pass's distinct reasons kept per kernel (the first is its first step's)
NOOP_NORMALIZE = "normalize: the kernel is in canonical form already"  # the normalized copy is the kernel: no reason


def owners() -> tuple[dict[str, str], list[str]]:
    """{round-1 step: the pass whose `space` declares it} (normalized steps to the same pass), and the passes with
    no round-1 step."""
    from s2s.optimize.registry import all_passes, get_pass

    out: dict[str, str] = {}
    empty: list[str] = []
    for name in all_passes():
        steps = tuple(getattr(get_pass(name), "space", (name,)))
        if not steps:
            empty.append(name)
        for step in steps:
            out.setdefault(step, name)
            out.setdefault(f"{NORMALIZE},{step}", name)
    return out, empty


@dataclass
class KernelResult:
    app: str
    kernel: str  # file:qualified@line
    status: str = "ok"  # ok | extract-failed | proposer-failed
    error: str = ""
    applied: dict[str, list[str]] = field(default_factory=dict)  # pass -> its steps that produced a rewrite
    kept: list[str] = field(default_factory=list)  # passes with a step the speculative-step rule kept
    via_normalize: list[str] = field(default_factory=list)  # passes that applied only behind `normalize,`
    refused: dict[str, list[str]] = field(default_factory=dict)  # pass -> distinct refusal reasons
    outside_search: dict[str, str] = field(default_factory=dict)  # empty-space pass -> "applies" or its refusal
    unfilled: bool = False  # the MEP still has values to fill in (optimize would stop there)
    text_only: str = ""  # why the passes ran on the kernel text alone (no launch, no cost model): the proposer stopped

    def category(self) -> str:
        if self.status != "ok":
            return self.status
        if any(p not in GENERIC and p != NORMALIZE for p in self.applied):
            return "algorithmic"
        return "generic-only" if self.applied else "none"


def round_one(app_dir: Path, spec: str, index: Any, step_owner: dict[str, str], empty: list[str],
              result: KernelResult) -> None:
    """Fill `result` with the built-in proposer's round 1 on the kernel `spec` of `app_dir`."""
    from s2s.base.errors import UserError
    from s2s.extract.mep_writer import make_mep
    from s2s.lang.kernel_facts import kernel_facts
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import BuiltinProposer
    from s2s.optimize.registry import Applied, make_pass, run_pass

    with tempfile.TemporaryDirectory(prefix="s2s-passaudit-") as tmp:
        try:
            _out, manifest, _ex = make_mep(str(app_dir), spec, str(Path(tmp) / "mep"), index=index)
        except UserError as err:
            result.status, result.error = "extract-failed", err.message
            return
        except Exception as exc:  # noqa: BLE001 - a crash of the extractor is counted, not hidden
            result.status, result.error = "extract-failed", _crash(exc)
            return
        original = (Path(tmp) / "mep" / manifest.kernel_file).read_bytes()
    result.unfilled = bool(manifest.unfilled())
    kernel = manifest.kernel.split("::")[-1]
    dialect = manifest.dialect
    try:
        facts = kernel_facts(original, dialect, kernel)
        state = State(manifest=manifest, original=original, kernel=kernel, dialect=dialect, facts=facts)
        proposer = BuiltinProposer()
        cands = proposer.propose(state)
        produced = [c.origin.removeprefix("pass:") for c in proposer.produced]  # every candidate made, kept or not
        refusals = proposer.refusals
    except Exception as exc:  # noqa: BLE001 - counted as a failure of the proposer on this kernel
        if not result.unfilled:
            result.status, result.error = "proposer-failed", _crash(exc)
            return
        # optimize refuses an MEP with values to fill in (here the launch or a size the proposer computes with):
        # the passes are run on the kernel text alone, as apply_pipeline runs them, without the launch
        result.text_only = f"the MEP has values to fill in ({manifest.unfilled()[0]}); the proposer stopped: {_crash(exc)}"
        cands, produced, refusals = [], *text_only_round(original, dialect, kernel, state.target)
    kept = {c.origin.removeprefix("pass:") for c in cands}
    plain_ok: set[str] = set()
    for pipeline in produced:
        owner = step_owner.get(pipeline, pipeline.split(",")[0].split("{")[0])
        result.applied.setdefault(owner, []).append(pipeline)
        if pipeline.startswith(NORMALIZE + ","):
            result.applied.setdefault(NORMALIZE, []).append(pipeline)
        else:
            plain_ok.add(owner)
        if pipeline in kept:
            result.kept.append(owner)
    result.via_normalize = sorted(p for p in result.applied if p != NORMALIZE and p not in plain_ok)
    result.kept = sorted(set(result.kept))
    for pipeline, why in refusals.items():
        owner = step_owner.get(pipeline, pipeline.split(",")[0].split("{")[0])
        if owner in result.applied or pipeline in produced:
            continue
        reasons = result.refused.setdefault(owner, [])
        if why not in reasons and len(reasons) < MAX_REASONS:
            reasons.append(why[:REASON_CHARS])
    for name in empty:
        if name == NORMALIZE:
            continue  # a prefix of other steps: counted through them
        out = run_pass(make_pass(name), original, dialect, kernel, state.target)
        result.outside_search[name] = "applies" if isinstance(out, Applied) else out.reason


# A suite whose every program shares one tree (NPB-GPU: CUDA/BT, CUDA/CG, ... beside CUDA/common): an application of
# it is audited on a scratch copy holding only its own program's directory and the shared ones, so that no other
# program's code (some are in the held-out split) is read.
SHARED_TREES = {"npb-": ("CUDA", ("common", "config", "sys"))}


def own_tree(app_dir: Path, name: str, scratch: Path) -> tuple[Path, str]:
    """The tree to audit for application `name` and, where it is a part of `app_dir`, which part."""
    for prefix, (top, shared) in SHARED_TREES.items():
        program = name.removeprefix(prefix).upper()
        if name.startswith(prefix) and (app_dir / top / program).is_dir():
            out = scratch / name
            (out / top).mkdir(parents=True)
            for item in (app_dir / top).iterdir():
                if item.is_file():
                    shutil.copy2(item, out / top / item.name)
            for part in (program, *shared):
                if (app_dir / top / part).is_dir():
                    shutil.copytree(app_dir / top / part, out / top / part)
            return out, ", ".join(f"{top}/{d}" for d in (program, *shared)) + f" and the files of {top}/"
    return app_dir, ""


def text_only_round(original: bytes, dialect: str, kernel: str, target: Any) -> tuple[list[str], dict[str, str]]:
    """Every round-1 step run on the kernel text with `run_pass` (each pass of its pipeline in turn), without the
    launch: the steps that change the text or the launch, and {step: why} for the others. A `normalize,STEP` step
    only where STEP refuses, as the proposer tries it."""
    from s2s.optimize.registry import Applied, make_pass, parse_pipeline, run_pass, search_space, without_normalization

    produced: list[str] = []
    refusals: dict[str, str] = {}
    for step in search_space():
        plain = without_normalization(step)
        if plain != step and plain in produced:
            continue
        source, changed, why = original, False, ""
        for name, opts in parse_pipeline(step):
            out = run_pass(make_pass(name, opts), source, dialect, kernel, target)
            if not isinstance(out, Applied):
                why = f"{name}: {out.reason}"
                break
            changed = changed or out.launch is not None or out.text != source
            source = out.text
        if why:
            refusals[step] = why
        elif changed:
            produced.append(step)
        else:
            refusals[step] = "no change"
    return produced, refusals


def audit_app(apps_dir: Path, name: str) -> tuple[dict[str, Any], list[KernelResult]]:
    """One application: its scan's outcome and every kernel's round 1."""
    with tempfile.TemporaryDirectory(prefix="s2s-passaudit-tree-") as scratch:
        app_dir, part = own_tree(apps_dir / name, name, Path(scratch))
        app, kernels = _audit_tree(app_dir, name)
    if part:
        app["tree"] = part
    return app, kernels


def _audit_tree(app_dir: Path, name: str) -> tuple[dict[str, Any], list[KernelResult]]:
    from s2s.base.errors import UserError
    from s2s.scan.tree import scan_tree

    step_owner, empty = owners()
    t0 = time.perf_counter()
    try:
        index = scan_tree(app_dir, jobs=1)
    except UserError as err:
        return {"status": "scan-failed", "error": err.message, "kernels": 0}, []
    except Exception as exc:  # noqa: BLE001 - counted, not dropped
        return {"status": "scan-failed", "error": _crash(exc), "kernels": 0}, []
    found = [k for k in index.kernels if k.language in {"cuda", "hip"}]  # every __global__ the scanner found
    kernels: list[KernelResult] = []
    for k in found:
        r = KernelResult(app=name, kernel=f"{k.file}:{k.qualified}@{k.line}")
        round_one(app_dir, r.kernel, index, step_owner, empty, r)
        kernels.append(r)
    seconds = round(time.perf_counter() - t0, 2)
    print(f"{name}: {len(found)} kernels, {seconds} s", file=sys.stderr, flush=True)
    return ({"status": "ok", "kernels": len(found), "scan_problems": len(index.problems), "seconds": seconds}, kernels)


def _crash(exc: BaseException) -> str:
    """`Type: message` and where it was raised (the innermost frame in s2s), for a crash counted as a failure."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/s2s/" in f.filename] or \
        traceback.extract_tb(exc.__traceback__)
    at = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}: {exc}{at}"


def audit(apps_dir: Path, names: list[str], jobs: int = 2, label: str = LABEL) -> dict[str, Any]:
    from s2s.optimize.registry import BUILTIN

    start = time.perf_counter()
    step_owner, _empty = owners()
    kernels: list[KernelResult] = []
    apps: dict[str, dict[str, Any]] = {}
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            done = list(pool.map(audit_app, [apps_dir] * len(names), names))
    else:
        done = [audit_app(apps_dir, n) for n in names]
    for name, (app, found) in zip(names, done):
        apps[name] = app
        kernels += found
    passes: dict[str, Any] = {}
    for p in sorted(BUILTIN):
        hit = [r for r in kernels if p in r.applied]
        out_hit = [r for r in kernels if r.outside_search.get(p) == "applies"]
        passes[p] = {
            "generic": p in GENERIC,
            "round1_steps": sum(1 for s, o in step_owner.items() if o == p and not s.startswith(NORMALIZE + ",")),
            "apps": len({r.app for r in hit}), "kernels": len(hit), "app_names": sorted({r.app for r in hit}),
            "kept_kernels": sum(1 for r in hit if p in r.kept),
            "via_normalize_only_kernels": sum(1 for r in hit if p in r.via_normalize),
            "outside_search_apps": len({r.app for r in out_hit}), "outside_search_kernels": len(out_hit),
        }
    counts = collections.Counter(r.category() for r in kernels)
    total = len(kernels)
    ok = [r for r in kernels if r.status == "ok"]
    reasons: collections.Counter[str] = collections.Counter()
    for r in ok:
        if r.category() != "algorithmic":
            reasons.update({first for p, whys in r.refused.items() if p not in GENERIC
                            for first in [w for w in whys if not w.startswith(NOOP_NORMALIZE)][:1]})
    table = sorted({w for r in kernels for whys in r.refused.values() for w in whys})
    where = {w: i for i, w in enumerate(table)}
    return {
        "label": label,
        "apps_dir": str(apps_dir),
        "commit": _commit(),
        "seconds": round(time.perf_counter() - start, 1),
        "generic_passes": {p: GENERIC_WHY[p] for p in GENERIC},
        "apps": apps,
        "totals": {
            "apps": len(names), "apps_scan_failed": sum(1 for a in apps.values() if a["status"] != "ok"),
            "apps_without_kernels": sorted(n for n, a in apps.items() if a["status"] == "ok" and not a["kernels"]),
            "kernels": total, **{c: counts.get(c, 0) for c in
                                 ("algorithmic", "generic-only", "none", "extract-failed", "proposer-failed")},
            "text_only": sum(1 for r in kernels if r.text_only),
            "share_no_pass": _share(counts.get("none", 0), total),
            "share_generic_only": _share(counts.get("generic-only", 0), total),
            "share_no_algorithmic": _share(total - counts.get("algorithmic", 0), total),
            "share_no_pass_of_extracted": _share(counts.get("none", 0), len(ok)),
            "share_generic_only_of_extracted": _share(counts.get("generic-only", 0), len(ok)),
        },
        "passes": passes,
        "top_refusals_without_algorithmic": reasons.most_common(10),
        "reasons": table,  # every distinct refusal reason once: a kernel's `refused` gives their positions here
        "kernels": [r.__dict__ | {"category": r.category(),
                                  "refused": {p: [where[w] for w in whys] for p, whys in r.refused.items()}}
                    for r in kernels],
    }


def _share(n: int, d: int) -> float:
    return round(n / d, 4) if d else 0.0


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent, check=False)
        return out.stdout.strip()
    except OSError:
        return ""


def markdown(data: dict[str, Any]) -> str:
    t = data["totals"]
    lines = [
        f"# Pass applicability, round 1 ({data['label']})",
        "",
        f"Commit {data['commit']}, {t['apps']} applications under `{data['apps_dir']}`, {t['kernels']} kernels, "
        f"{data['seconds']} s (bench/pass_applicability.py). The built-in proposer's round 1 on each kernel's "
        "extracted MEP (no inherited patterns, the H200 default device); a pass applies where one of its round-1 "
        "steps produced a rewrite.",
        "",
        "| kernels | count | share |",
        "|---|---:|---:|",
    ]
    for c in ("algorithmic", "generic-only", "none", "extract-failed", "proposer-failed"):
        lines.append(f"| {c} | {t[c]} | {_pct(t[c], t['kernels'])} |")
    lines += [
        "",
        f"No pass applies: {t['share_no_pass']:.1%} of all kernels ({t['share_no_pass_of_extracted']:.1%} of those "
        f"extracted); only generic passes: {t['share_generic_only']:.1%} ({t['share_generic_only_of_extracted']:.1%}); "
        f"no algorithmic pass (none, generic only or failed): {t['share_no_algorithmic']:.1%}. "
        f"{t['text_only']} of the kernels counted have an MEP with values to fill in (the launch or a size) on which "
        "the proposer stopped (`s2s optimize` refuses such an MEP until they are filled in): their passes were run on "
        "the kernel text alone (`run_pass` on each round-1 step, no launch, no cost model). "
        f"Applications whose scan failed: {t['apps_scan_failed']}; whose scan found no kernel: "
        f"{len(t['apps_without_kernels'])} ({', '.join(t['apps_without_kernels']) or 'none'}).",
        "",
        "Generic passes (change no algorithm): " + "; ".join(f"`{p}` ({w})" for p, w in data["generic_passes"].items()) + ".",
        "",
        "## Per pass",
        "",
        "*kept by the search*: kernels where the cost model's speculative-step rule kept one of the pass's steps (only "
        "where the proposer ran: never on the kernels run on their text alone); *only behind normalize*: kernels where "
        "the pass applied only as `normalize,STEP`.",
        "",
        "| pass | generic | apps | kernels | kept by the search | only behind normalize | applications |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for p, s in sorted(data["passes"].items(), key=lambda kv: (-kv[1]["apps"], kv[0])):
        names = ", ".join(s["app_names"][:12]) + (" ..." if len(s["app_names"]) > 12 else "")
        extra = ""
        if not s["round1_steps"]:
            extra = (f" (no round-1 step; alone with its defaults: {s['outside_search_apps']} apps, "
                     f"{s['outside_search_kernels']} kernels)")
        lines.append(f"| {p} | {'yes' if s['generic'] else ''} | {s['apps']} | {s['kernels']} | {s['kept_kernels']} | "
                     f"{s['via_normalize_only_kernels']} | {names}{extra} |")
    lines += ["", "## The 10 most common refusals where no algorithmic pass applies", "",
              "Each algorithmic pass's first refusal on a kernel (that of its first round-1 step: for most passes the shape "
              "it needs), each reason counted once per kernel, over the kernels extracted whose category is generic-only "
              "or none (the normalization's no-op refusal left out).", "", "| kernels | reason |", "|---:|---|"]
    for why, n in data["top_refusals_without_algorithmic"]:
        lines.append(f"| {n} | {why.replace('|', '/')[:300]} |")
    lines += ["", "## Per kernel", "", "| application | kernel | category | passes that apply |", "|---|---|---|---|"]
    for k in data["kernels"]:
        what = ", ".join(sorted(k["applied"])) if k["status"] == "ok" else k["error"].replace("|", "/")[:160]
        lines.append(f"| {k['app']} | `{k['kernel']}` | {k['category']}{' (text only)' if k['text_only'] else ''} | {what} |")
    return "\n".join(lines) + "\n"


def _pct(n: int, d: int) -> str:
    return f"{n / d:.1%}" if d else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("apps_dir", type=Path)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--jobs", type=int, default=2, help="applications audited at once (worker processes)")
    ap.add_argument("--label", default=LABEL, help=f"what the applications are (default: {LABEL})")
    ap.add_argument("--list", type=Path, help="the application directories to audit, one a line (default: all)")
    args = ap.parse_args(argv)
    if not args.apps_dir.is_dir():
        print(f"{args.apps_dir}: not a directory", file=sys.stderr)
        return 2
    if args.list is not None:
        names = [ln.strip() for ln in args.list.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    else:
        names = sorted(p.name for p in args.apps_dir.iterdir() if p.is_dir())
    data = audit(args.apps_dir, names, args.jobs, args.label)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "pass_applicability.json").write_text(json.dumps(data, indent=1, separators=(",", ":")) + "\n")
    (args.out_dir / "pass_applicability.md").write_text(markdown(data))
    t = data["totals"]
    print(f"{t['kernels']} kernels in {t['apps']} apps: algorithmic {t['algorithmic']}, generic only {t['generic-only']}, "
          f"none {t['none']}, failed {t['extract-failed'] + t['proposer-failed']}; {data['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
