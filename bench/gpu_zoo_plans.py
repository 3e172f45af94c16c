"""Fixed pipelines on zoo kernels, each verified and timed once against the original (no search), from a plan file.

    python bench/gpu_zoo_plans.py PLANFILE OUT_DIR [--only a,b] [--part I/K] [--work DIR] [--dry] [--deadline S] [--jobs N]

A plan (bench/plans/*.toml) is data: `name` (the result files' stem), `report` (the columns: bandwidth, underfill or
gemm), the zoo kernels and their pipelines: `[kernels]` kernel = [pipelines], or `kernels` = [names]; `every` (pipelines
for every kernel), `spaces` (passes whose whole search space is added), `[before]` kernel = step (put before each of
its pipelines: a step that opens the kernel's shape first), `capture` (kernels the catalog marks run on their app's
captured data). Per kernel: its MEP extracted as bench/gpu_zoo.py extracts it, each pipeline applied to the original
and written as a variant; then every kernel's variants built at once (`--jobs` compilers), then each run by
s2s.mep.evaluate (checked on the MEP's input sets, timed in alternation with the original), none after `--deadline`
seconds. The results are rewritten after each kernel: OUT/NAME[_partIofK].{json,md}.
`--dry` (no GPU): extraction, rewriting and nvcc builds only. Exit 1 when a kernel failed or a variant did not build.

The plans: zoo_bandwidth.toml (bench/gpu_zoo_bandwidth.sh), underfill.toml (bench/gpu_underfill.sh), gemm_forms.toml
and gemm_forms_all.toml (bench/gpu_gemm_forms.sh); each says what it measures and how long it takes.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import commit, write_result  # noqa: E402
from zoo_catalog import BY_NAME, ZooKernel  # noqa: E402
from zoo_plan_reports import REPORTS, Report  # noqa: E402

os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")
KEYS = {"name", "report", "capture", "kernels", "every", "spaces", "before"}


class PlanError(Exception):
    """A plan file that cannot be read: one line naming the file and line."""


@dataclass(frozen=True)
class Plan:
    path: Path
    name: str  # the result files' stem
    report: str  # a key of zoo_plan_reports.REPORTS
    steps: dict[str, tuple[tuple[str, str], ...]]  # kernel -> (form, pipeline applied): the form behind its `before` step
    capture: bool = False
    forms: tuple[str, ...] = ()  # the pipelines every kernel gets (`every` and `spaces`)


def _where(path: Path, text: str, key: str) -> str:
    """PATH:LINE of the first line that starts with `key` (or of a line holding it in quotes), else PATH."""
    lines = text.splitlines()
    for i, line in enumerate(lines, 1):
        if line.strip().startswith((f"{key} ", f"{key}=")) or f'"{key}"' in line:
            return f"{path}:{i}"
    return str(path)


def _strings(value: object, what: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PlanError(f"{where}: {what} must be a list of strings")
    return list(value)


def load_plan(path: Path) -> Plan:
    """The plan in `path`, every kernel in the zoo catalog and every step a registered pass, else PlanError."""
    from s2s.optimize.registry import get_pass, parse_pipeline

    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(f"{path}: {exc}") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # "... (at line 3, column 8)" or "(at end of document)"
        line = re.search(r"\(at line (\d+)", str(exc))
        where = line.group(1) if line else str(len(text.splitlines()))
        raise PlanError(f"{path}:{where}: {re.sub(r' [(]at [^)]*[)]$', '', str(exc))}") from None
    for key in doc:
        if key not in KEYS:
            raise PlanError(f"{_where(path, text, key)}: unknown key '{key}' (known: {', '.join(sorted(KEYS))})")
    if not isinstance(doc.get("name"), str) or doc.get("report") not in REPORTS:
        raise PlanError(f"{path}: needs name = \"STEM\" and report = one of {', '.join(REPORTS)}")
    every = _strings(doc.get("every", []), "every", _where(path, text, "every"))
    for name in _strings(doc.get("spaces", []), "spaces", _where(path, text, "spaces")):
        try:
            every += [s for s in get_pass(name).space if s not in every]
        except (KeyError, AttributeError):
            raise PlanError(f"{_where(path, text, 'spaces')}: no pass with a search space named '{name}'") from None
    kernels = doc.get("kernels", {})
    if isinstance(kernels, list):
        kernels = {k: [] for k in _strings(kernels, "kernels", _where(path, text, "kernels"))}
    if not isinstance(kernels, dict) or not kernels:
        raise PlanError(f"{_where(path, text, 'kernels')}: kernels must be a table (kernel = [pipelines]) or a list of names")
    before = doc.get("before", {})
    if not isinstance(before, dict) or not all(isinstance(v, str) for v in before.values()):
        raise PlanError(f"{_where(path, text, 'before')}: before must be a table of kernel = \"step\"")
    steps: dict[str, tuple[tuple[str, str], ...]] = {}
    for kernel in list(kernels) + list(before):
        if kernel not in BY_NAME:
            raise PlanError(f"{_where(path, text, kernel)}: no zoo kernel '{kernel}' (bench/zoo_catalog.py)")
        if kernel not in kernels:
            raise PlanError(f"{_where(path, text, kernel)}: '{kernel}' has a `before` step but is not in kernels")
    for kernel, own in kernels.items():
        forms = _strings(own, f"{kernel}'s pipelines", _where(path, text, kernel)) + every
        if not forms:
            raise PlanError(f"{_where(path, text, kernel)}: no pipelines for '{kernel}' (list them, or give `every`)")
        pre = before.get(kernel, "")
        steps[kernel] = tuple((f, f"{pre},{f}" if pre else f) for f in forms)
        for _form, pipeline in steps[kernel]:
            try:
                for step, _opts in parse_pipeline(pipeline):
                    get_pass(step)
            except (KeyError, ValueError) as exc:
                raise PlanError(f"{_where(path, text, kernel)}: '{pipeline}': {str(exc).strip(chr(34))}") from None
    return Plan(path, doc["name"], doc["report"], steps, bool(doc.get("capture", False)), tuple(every))


@dataclass
class Job:
    """One kernel on its way through the phases: its result row, its MEP, and the variants to build and run."""

    kernel: ZooKernel
    row: dict[str, Any]
    mep: Path | None = None
    todo: list[tuple[dict[str, Any], str]] = field(default_factory=list)  # (entry, variant id)
    built: list[Any] = field(default_factory=list)


def state_of(mep: Path) -> Any:
    from s2s.lang.kernel_facts import kernel_facts
    from s2s.mep.manifest import load
    from s2s.optimize.proposers.base import State

    m = load(mep)
    src = (mep / m.kernel_file).read_bytes()
    dialect = "opencl" if m.backend == "opencl" else "cuda"
    return State(manifest=m, original=src, kernel=m.kernel, dialect=dialect, facts=kernel_facts(src, dialect, m.kernel))


def prepare(plan: Plan, report: Report, k: ZooKernel, work: Path, dry: bool) -> Job:
    """Extracted (and captured, where the plan and the catalog say so), every pipeline applied and written as a variant."""
    from gpu_zoo import capture, extract

    from s2s.optimize.candidate import Candidate
    from s2s.optimize.loop import write_variant
    from s2s.optimize.proposers.builtin import apply_pipeline

    mep, unfilled, fixes = extract(k, work)
    job = Job(k, report.row(k.name, fixes, unfilled))
    if unfilled:
        job.row["error"] = f"FILL-IN left: {'; '.join(unfilled)}"
        return job
    if plan.capture and k.capture and not dry:
        cap = capture(k, mep, work)
        job.row["capture_rc"] = cap["rc"]
        if cap["rc"] != 0:
            job.row["error"] = f"capture failed: {cap['output'][-200:]}"
            return job
    state = state_of(mep)
    report.kernel(job.row, k, state)
    for form, pipeline in plan.steps[k.name]:
        cand = apply_pipeline(pipeline, state)
        entry = report.entry(form, pipeline)
        job.row[report.entries].append(entry)
        if not isinstance(cand, Candidate):
            report.refused(entry, cand)
            continue
        write_variant(mep, state.manifest.kernel_file, cand)
        report.applied(entry, cand, state)
        job.todo.append((entry, cand.id))
    job.mep = mep
    return job


def build(job: Job, report: Report, jobs: int) -> None:
    from s2s.mep import evaluate

    if job.mep is not None and job.todo:
        job.built = evaluate.build_many(job.mep, [vid for _, vid in job.todo], jobs=jobs)
        for (entry, _), b in zip(job.todo, job.built):
            report.built(entry, b)


def run(job: Job, report: Report, dry: bool, until: float) -> None:
    """Each built variant checked against the original and timed (one at a time), none after `until`."""
    from s2s.mep import evaluate

    if job.mep is None:
        return
    report.before_runs(job.row, job.kernel, dry)
    if dry:
        return
    for (entry, _), b in zip(job.todo, job.built):
        if time.time() > until:
            entry["verdict"] = "not run (deadline)"
            continue
        report.timed(entry, evaluate.run_built(b), job.row)


def part_of(names: list[str], part: str, prog: str) -> list[str] | None:
    """Every K-th name from the I-th (`part` is I/K); None, with a one-line message, when `part` is not I/K."""
    i, _, n = part.partition("/")
    if not (i.isdigit() and n.isdigit() and 1 <= int(i) <= int(n)):
        print(f"{prog}: --part {part}: want I/K with 1 <= I <= K", file=sys.stderr)
        return None
    return names[int(i) - 1::int(n)]


def stem_of(base: str, part: str) -> str:
    """The result files' name: BASE, or BASE_partIofK for a part."""
    return base if part == "1/1" else f"{base}_part{part.replace('/', 'of')}"


@contextmanager
def workdir(given: str, prefix: str) -> Iterator[Path]:
    """`given`, or a temporary folder removed afterwards."""
    if given:
        yield Path(given)
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)


def guarded(name: str, phase: str, fn: Any, *args: Any) -> tuple[Any, str | None]:
    """(`fn(*args)`, None), or (None, the error) where it raised: one kernel's failure is not the end of the run."""
    try:
        return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - a row of the table, not the end of the run
        print(f"{name}: {phase} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return None, f"{phase}: {type(exc).__name__}: {exc}"[:400]


def execute(plan: Plan, names: list[str], out: Path, stem: str, work: Path, dry: bool, until: float,
            jobs: int) -> dict[str, Any]:
    """The plan on `names`: every kernel prepared, every variant built (all kernels' at once, `jobs` compilers in all),
    then each kernel's variants run; the result files rewritten after each kernel. The document written last."""
    report = REPORTS[plan.report]()
    head = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit(), "dry": dry,
            "plan": plan.path.name, **report.setup(dry, plan)}
    done: list[Job] = []
    for name in names:  # extraction and rewriting: one kernel at a time (seconds each)
        t0 = time.time()
        job, error = guarded(name, "prepare", prepare, plan, report, BY_NAME[name], work, dry)
        if job is None:
            job = Job(BY_NAME[name], {"kernel": name, "error": error})
        job.row["seconds"] = round(time.time() - t0, 1)
        done.append(job)
    building = [j for j in done if j.mep is not None and j.todo]
    per = max(1, min(max((len(j.todo) for j in building), default=1), jobs))

    def build_one(j: Job) -> None:
        _, error = guarded(j.kernel.name, "build", build, j, report, per)
        if error:
            j.row["error"], j.mep = error, None

    with ThreadPoolExecutor(max_workers=max(1, jobs // per)) as pool:
        list(pool.map(build_one, building))
    doc = head
    for job in done:
        t0 = time.time()
        _, error = guarded(job.kernel.name, "run", run, job, report, dry, until)
        if error:
            job.row["error"] = error
        report.finish(job.row)
        job.row["seconds"] = round(job.row.get("seconds", 0) + time.time() - t0, 1)
        print(f"{job.kernel.name}: {job.row['seconds']:.0f} s", file=sys.stderr, flush=True)
        doc = {**head, "kernels": [j.row for j in done]}
        write_result(out, stem, doc, report.markdown(doc))
    return doc


def failed(rows: list[dict[str, Any]], report: Report) -> list[str]:
    return [r["kernel"] for r in rows if r.get("error") or any(report.build_failed(e) for e in r.get(report.entries, []))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plan", type=Path, help="a plan file (bench/plans/*.toml)")
    ap.add_argument("out", type=Path, help="where NAME[_partIofK].json and .md go")
    ap.add_argument("--only", default="", help="comma-separated kernels of the plan (default: all of them)")
    ap.add_argument("--part", default="1/1", help="every K-th kernel from the I-th (I/K)")
    ap.add_argument("--work", default="", help="where the MEPs go (default: a temporary folder, removed afterwards)")
    ap.add_argument("--dry", action="store_true", help="extract, rewrite and build only (no GPU)")
    ap.add_argument("--deadline", type=float, default=540.0, help="seconds after which no further variant is run")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="compilers at once")
    args = ap.parse_args(argv)
    try:
        plan = load_plan(args.plan)
    except PlanError as exc:
        print(exc, file=sys.stderr)
        return 2
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(plan.steps)
    bad = [n for n in names if n not in plan.steps]
    if bad:
        print(f"gpu_zoo_plans: {args.plan}: no kernel {', '.join(bad)} in the plan (known: {', '.join(plan.steps)})", file=sys.stderr)
        return 2
    picked = part_of(names, args.part, "gpu_zoo_plans")
    if picked is None:
        return 2
    until = time.time() + args.deadline
    with workdir(args.work, f"s2s-{plan.name}-") as work:
        doc = execute(plan, picked, args.out, stem_of(plan.name, args.part), work, args.dry, until, max(1, args.jobs))
    report = REPORTS[plan.report]()
    print(report.markdown(doc))
    bad = failed(doc["kernels"], report)
    if bad:
        print(f"gpu_zoo_plans: failed or not built: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
