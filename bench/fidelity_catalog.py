"""Static extraction against the truth on the development catalogue (issue 29): for every development application of
bench/apps/catalog.toml (never the held-out split), the kernels it launches, each one's MEP, and every value `s2s
extract` infers without running anything compared with the value captured from the application's real run.

    python bench/fidelity_catalog.py --apps-dir DIR --out OUT [--apps a,b] [--per-app 40] [--jobs 1]      CPU part
    python3 bench/fidelity_catalog.py --capture --apps-dir DIR --out OUT [--parallel 10] [--deadline 420]  GPU part
                                      [--app-timeout 300] [--static CPU_RESULT.json]
    python bench/fidelity_catalog.py --merge GPU_OUT/fidelity_catalog.json [--static CPU_RESULT.json] --out DIR
    S2S_COMMIT=C python bench/fidelity_catalog.py --collect RUN_DIR [RUN_DIR ...] --out DIR     CPU runs over parts
    python bench/fidelity_catalog.py --held-out --apps-dir HELD_DIR --out OUT      the CPU part over the held-out split

--held-out runs the CPU part (or --collect) over the held-out split's applications only (laid out with layout.py
--label held-out), every row and the summary labelled "held-out split" and its markdown the totals alone: reported
beside the development corpus's figures, never mixed into them, never read to tune anything.

DIR holds the applications laid out by bench/apps/layout.py (DIR/NAME/, the catalogue's commands run there).

CPU part (nvcc, no GPU): per application its tree is scanned and the kernels it launches listed (`kernels_found`: a
CUDA/HIP kernel with a launch site in a file the build compiles, from a dry run of the build command, or in a header;
every launch site when the dry run says nothing); at most --per-app of them, spread over the tree, are extracted with
the build command (`extracted`), their kernel file compiled alone with `nvcc -arch=sm_90 -c` (`compile_alone`) and,
with no FILL-IN left, the MEP's harness built (`runnable_no_edits`): bench/fidelity.py's `one_kernel`. A kernel is
`compile_time_sized` when its application's catalogue run passes the program no argument (its sizes are the
program's own: NPB's class, a HeCBench program run as `./main`).

GPU part (--capture): per application ONE instrumented build and run (`capture_kernels` with the chosen kernels and
`compare_static`), in a worker process of its own, --parallel applications at a time, the costliest first (the
catalogue run plus 8 s for each kernel the CPU part found); no application starts within 30 s of --deadline, and at the deadline (or after --app-timeout) a worker is
stopped with every process it started; its capture kills the application's run COLLECT_S (25 s) earlier, the build's
time counted, so the kernels recorded before the kill are still collected and compared (`run_stopped` in its row). Per kernel: captured or why not, equal / FILL-IN / wrong / unknown counts, and
every wrong value with its field, static value and captured value. The CPU keys of the summary come from --static
(a CPU part's fidelity_catalog.json; default: the newest under bench/results/fidelity/), matched by kernel.

Writes OUT/fidelity_catalog.json (every application and kernel), OUT/fidelity_summary.json (the totals: commit,
kernels_found, extracted, compile_alone, runnable_no_edits, compile_time_sized, kernels_compared, values_equal,
values_fillin, values_wrong, ...), OUT/fidelity_summary.md, and with --capture OUT/apps/NAME.json and NAME.log.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "apps"))

from fidelity import _built_files, _nvcc, _pick, one_kernel  # noqa: E402
from layout import load  # noqa: E402
from provenance import commit, write_result  # noqa: E402
from split import label as label_of  # noqa: E402

LABEL = "development corpus"
HELD_OUT = "held-out split"
HEADERS = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inc", ".inl")
MARK = "S2S_FIDELITY_CATALOG"  # in each worker's environment, inherited by every process it starts: found and ended by it
SUMMARY_KEYS = ("commit", "kernels_compared", "values_equal", "values_fillin", "values_wrong", "kernels_found",
                "extracted", "compile_alone", "runnable_no_edits", "compile_time_sized")


def heldout_names() -> set[str]:
    text = (ROOT / "bench" / "apps" / "heldout.txt").read_text()
    return {ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")}


def dev_apps(catalog: Path, apps_dir: Path, names: str | None) -> list[dict[str, Any]]:
    """The development applications of the catalogue laid out in `apps_dir` (all, or those `names` lists); a held-out
    one (by its label, the rule or heldout.txt) is never among them, even when named."""
    held = heldout_names()
    apps = [a for a in load(catalog) if a["label"] == LABEL and label_of(a["name"]) == LABEL and a["name"] not in held]
    if names:
        want = [n.strip() for n in names.split(",") if n.strip()]
        apps = [a for a in apps if a["name"] in want]
    return [a for a in apps if (apps_dir / a["name"]).is_dir()]


def heldout_apps(catalog: Path, apps_dir: Path, names: str | None) -> list[dict[str, Any]]:
    """--held-out: the held-out split's applications laid out in `apps_dir` (by its label, the rule or heldout.txt),
    never a development one; their figures are reported beside the development corpus's, never mixed into them."""
    held = heldout_names()
    apps = [a for a in load(catalog) if a["label"] == HELD_OUT or label_of(a["name"]) == HELD_OUT or a["name"] in held]
    if names:
        want = [n.strip() for n in names.split(",") if n.strip()]
        apps = [a for a in apps if a["name"] in want]
    return [a for a in apps if (apps_dir / a["name"]).is_dir()]


def compile_time_sized(app: dict[str, Any]) -> bool:
    """The catalogue's run passes the program no argument (its last command is the program alone)."""
    last = app["run"].replace("||", "&&").replace(";", "&&").split("&&")[-1]
    try:
        words = shlex.split(last)
    except ValueError:
        return False
    return len(words) == 1


def launched_kernels(tree: Path, build_cmd: str) -> tuple[list[dict[str, Any]], Any]:
    """The tree's CUDA/HIP kernels, defined in a built file (or a header), that a launch site of a built file (or of a
    header) names, in file and line order, and the tree's scan (for the extractions)."""
    from s2s.scan.tree import scan_tree

    index = scan_tree(tree, jobs=1)
    built = _built_files(tree, build_cmd)

    def counts(site_file: str) -> bool:
        return not built or site_file in built or site_file.endswith(HEADERS)

    from s2s.capture.indirect import is_indirect, launched_name

    names = {k.name for k in index.kernels}
    sites = [s for s in index.launches if counts(s.file)]
    launched = {launched_name(s).split("::")[-1] for s in sites}
    if any(is_indirect(s, names) for s in sites):  # `kernel<<<g, b>>>(...)` through a pointer: a kernel the host code
        launched |= _named_elsewhere(tree, {s.file for s in sites} | {k.file for k in index.kernels if counts(k.file)},
                                     names - launched)  # names besides its definition (`kernel = &copy;`) may be it
    found = [{"name": k.name, "file": k.file, "line": k.line, "language": k.language} for k in index.kernels
             if k.language in {"cuda", "hip"} and k.name in launched and counts(k.file)]  # not a namesake of a file
    # the build does not compile (NPB's BT and SP define kernels of the same names)
    found.sort(key=lambda k: (k["file"], k["line"]))
    return found, index


def _named_elsewhere(tree: Path, files: set[str], names: set[str]) -> set[str]:
    """Those of `names` that the files' text names more than once (a definition and a use: `kernel = &copy;`)."""
    import re

    text = "\n".join((tree / f).read_text(encoding="utf-8", errors="replace") for f in sorted(files) if (tree / f).is_file())
    return {n for n in names if len(re.findall(r"(?<![\w.])" + re.escape(n) + r"\b", text)) > 1}


def spec_of(k: dict[str, Any]) -> str:
    return f"{k['file']}:{k['name']}@{k['line']}"


def chosen_kernels(tree: Path, build_cmd: str, per_app: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any]:
    found, index = launched_kernels(tree, build_cmd)
    return found, _pick(found, per_app), index


# ---------------------------------------------------------------- CPU part

def static_app(app: dict[str, Any], apps_dir: Path, per_app: int, build: bool, scratch: Path,
               label: str = LABEL) -> dict[str, Any]:
    """One application's CPU part: the kernels it launches, and each chosen one extracted, compiled alone, built."""
    tree = apps_dir / app["name"]
    t0 = time.monotonic()
    row: dict[str, Any] = {"name": app["name"], "label": label, "compile_time_sized": compile_time_sized(app)}
    try:
        found, picked, index = chosen_kernels(tree, app["build"], per_app)
    except Exception as e:  # noqa: BLE001 - an application the scan cannot read is a result (no kernel found)
        row.update(kernels_found=0, kernels=[], error=f"scan: {type(e).__name__}: {e}"[:300])
        return row
    nvcc = _nvcc()
    recs = []
    for i, k in enumerate(picked):
        rec = one_kernel(str(tree), spec_of(k), str(scratch / f"{app['name']}-{i}"), nvcc, build, build_cmd=app["build"],
                         index=index)
        rec["compile_time_sized"] = row["compile_time_sized"]
        recs.append(rec)
    row.update(kernels_found=len(found), found=[spec_of(k) for k in found], kernels=recs,
               seconds=round(time.monotonic() - t0, 1))
    return row


def static_part(apps: list[dict[str, Any]], apps_dir: Path, per_app: int, build: bool, jobs: int,
                out: Path, label: str = LABEL) -> list[dict[str, Any]]:
    """Every application's CPU part, `jobs` at a time; each one's row also in OUT/apps/NAME.json as soon as it is done."""
    import concurrent.futures as cf
    import shutil

    (out / "apps").mkdir(parents=True, exist_ok=True)

    scratch = Path(tempfile.mkdtemp(prefix="s2s-fidcat-"))
    rows: list[dict[str, Any]] = []
    try:
        with cf.ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
            futs = [pool.submit(static_app, a, apps_dir, per_app, build, scratch, label) for a in apps]
            for f in futs:
                r = f.result()
                rows.append(r)
                (out / "apps" / f"{r['name']}.json").write_text(json.dumps(r, indent=1) + "\n")
                ks = r["kernels"]
                print(f"{r['name']}: found {r['kernels_found']}, examined {len(ks)}, extracted "
                      f"{sum(1 for k in ks if k.get('extracted'))}, compile alone {sum(1 for k in ks if k.get('compiles_alone'))}, "
                      f"runnable {sum(1 for k in ks if k.get('runnable'))} ({r.get('seconds', 0)} s)", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return rows


# ---------------------------------------------------------------- GPU part: one worker per application

def _bytes(text: str) -> int:
    """--max-bytes as `s2s capture --max-bytes` reads it (3G, 512M, 1073741824)."""
    from s2s.base.errors import UserError
    from s2s.capture import parse_bytes

    try:
        return parse_bytes(text)
    except (UserError, ValueError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def capture_app(app: dict[str, Any], apps_dir: Path, work: Path, per_app: int, timeout: float, max_bytes: int,
                row: dict[str, Any]) -> dict[str, Any]:
    """One instrumented build and run of the application capturing its chosen kernels, each compared with its static
    extraction, recorded into `row` as it goes (a worker stopped by a signal still has the kernels it chose). Raises
    nothing but Interrupted: a failure is every kernel's "not captured: <reason>"."""
    from s2s.base.errors import UserError
    from s2s.capture import Captured, KernelCapture, capture_kernels

    tree = apps_dir / app["name"]
    t0 = time.monotonic()
    row.update(name=app["name"], label=LABEL, catalog_run_s=app.get("run_seconds"))
    try:
        found, picked, _index = chosen_kernels(tree, app["build"], per_app)
    except Exception as e:  # noqa: BLE001
        row.update(kernels_found=0, kernels=[], error=f"scan: {type(e).__name__}: {e}"[:300])
        return row
    row["kernels_found"] = len(found)
    row["select_s"] = round(time.monotonic() - t0, 1)
    jobs = [KernelCapture(spec_of(k), output=str(work / f"k{i}")) for i, k in enumerate(picked)]
    kernels: list[dict[str, Any]] = [{"kernel": j.kernel} for j in jobs]
    row["kernels"] = kernels
    print(f"{app['name']}: {len(found)} kernels launched, capturing {', '.join(j.kernel for j in jobs) or 'none'}", flush=True)
    try:
        run = capture_kernels(tree, jobs, app["build"], app["run"], compare_static=True, timeout=timeout, max_bytes=max_bytes,
                              total_s=timeout - (time.monotonic() - t0))  # the build's time counts: the worker's own limit
        row.update(build_s=round(run.build_s, 1), run_s=round(run.run_s, 1))
        if run.stopped:  # killed at its timeout: the kernels recorded before still count
            row["run_stopped"] = run.stopped
        for rec, got in zip(kernels, run.results):
            if isinstance(got, Captured) and got.fidelity is not None:
                rows = got.fidelity.get("values", [])
                rec.update(captured=True, summary=dict(got.fidelity.get("summary", {})), launches_seen=got.launches_seen,
                           wrong=[r for r in rows if r.get("verdict") == "wrong"],
                           fill_in=[r["value"] for r in rows if r.get("verdict") == "FILL-IN"],
                           unknown=[r["value"] for r in rows if r.get("verdict") == "unknown"])
            elif isinstance(got, Captured):
                rec.update(captured=False, why="not captured: no comparison written")
            else:
                rec.update(captured=False, why=f"not captured: {str(got).splitlines()[0][:300] if str(got) else type(got).__name__}")
    except UserError as e:  # the build or the run failed (or was killed): no kernel of the application captured
        why = f"not captured: {str(e).splitlines()[0][:300]}"
        for rec in kernels:
            rec.update(captured=False, why=why)
        _show_log(e.file)
    except Exception as e:  # noqa: BLE001 - a crash of the tool is a result too, with its traceback in the log
        traceback.print_exc()
        for rec in kernels:
            rec.update(captured=False, why=f"not captured: crash: {type(e).__name__}: {e}"[:300])
    row.update(kernels=kernels, seconds=round(time.monotonic() - t0, 1))
    for rec in kernels:
        print(f"  {rec['kernel']}: " + (json.dumps(rec["summary"]) if rec.get("captured") else str(rec.get("why"))), flush=True)
    return row


def _show_log(path: str | None, keep: int = 60) -> None:
    """The end of a failed capture's own log (a temporary file it leaves for the user) printed, and the file removed."""
    if not path or not Path(path).name.startswith("s2s-capture-") or not Path(path).is_file():
        return
    lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    print("\n".join(["--- the capture's log (end) ---", *lines[-keep:], "---"]), flush=True)
    Path(path).unlink(missing_ok=True)


def worker_main(args: argparse.Namespace) -> int:
    """--worker NAME: one application's capture, its row written to --row (as JSON), also when stopped by a signal."""
    import shutil

    from s2s.base.procs import Interrupted, signals_raise

    app = next(a for a in load(args.catalog) if a["name"] == args.worker)
    work = Path(tempfile.mkdtemp(prefix=f"s2s-fidcat-{app['name']}-"))
    row: dict[str, Any] = {"name": app["name"], "label": LABEL, "kernels": []}
    try:
        with signals_raise():
            capture_app(app, Path(args.apps_dir), work, args.per_app, args.capture_timeout, args.max_bytes, row)
    except Interrupted as e:
        row.update(stopped=str(e))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        Path(args.row).write_text(json.dumps(row, indent=1, default=str) + "\n")
    return 0


def _end(workers: list[tuple[subprocess.Popen[bytes], str]], grace: float = 10.0) -> None:
    """Stop workers: SIGTERM to each (it kills its builds and runs and writes its row), at most `grace` seconds for all
    of them to end, then SIGKILL to each group and to every process still carrying a worker's token."""
    from s2s.base.procs import kill_group, kill_until_none, marked

    for proc, _token in workers:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    until = time.monotonic() + grace
    for proc, _token in workers:
        try:
            proc.wait(timeout=max(0.1, until - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for proc, token in workers:
        kill_group(proc.pid)
        proc.wait()
        kill_until_none(lambda t=token: marked(t, MARK), 10.0)  # type: ignore[misc]


COLLECT_S = 25.0  # of an application's time, kept for collecting and comparing what its run recorded


def capture_timeout(allowed: float) -> float:
    """The capture's own timeout within the `allowed` seconds of a worker: its build and run killed by the capture
    COLLECT_S before the worker is, so the kernels recorded before the kill are still collected and compared
    (`CaptureRun.stopped`), not lost with the worker."""
    return max(1.0, allowed - min(COLLECT_S, allowed / 4))


def capture_part(apps: list[dict[str, Any]], args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    """Every application's worker, --parallel at a time, the costliest first (`cost_s`: its catalogue run and its
    kernels, else its run), within --deadline."""
    t_end = time.monotonic() + args.deadline
    (out / "apps").mkdir(parents=True, exist_ok=True)
    todo = sorted(apps, key=lambda a: -float(a.get("cost_s", a.get("run_seconds")) or 0.0))
    running: dict[str, tuple[subprocess.Popen[bytes], str, float, float, Any]] = {}
    rows: dict[str, dict[str, Any]] = {}

    def finish(names: list[str], why: str | None) -> None:
        _end([(running[n][0], running[n][1]) for n in names])
        now = time.monotonic()
        for name in names:
            proc, _token, t0, until, log = running.pop(name)
            log.close()
            stopped = why and ("the deadline" if until >= t_end else f"the per-application timeout ({args.app_timeout:g} s)")
            rows[name] = r = _read_row(out / "apps" / f"{name}.json", name, stopped or None, now - t0)
            caps = sum(1 for k in r["kernels"] if k.get("captured"))
            print(f"{name}: {caps}/{len(r['kernels'])} captured in {r.get('seconds', now - t0):.0f} s "
                  f"(build {r.get('build_s', '-')} s, run {r.get('run_s', '-')} s)" + (f", stopped at {stopped}" if stopped else ""),
                  flush=True)

    try:
        while todo or running:
            now = time.monotonic()
            while todo and len(running) < args.parallel and t_end - now >= 30:
                app = todo.pop(0)
                token = f"{os.getpid()}.{app['name']}.{secrets.token_hex(4)}"
                log = open(out / "apps" / f"{app['name']}.log", "wb")  # noqa: SIM115 - closed when the worker ends
                cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", app["name"], "--apps-dir", str(args.apps_dir),
                       "--catalog", str(args.catalog), "--per-app", str(args.per_app), "--row", str(out / "apps" / f"{app['name']}.json"),
                       "--capture-timeout", str(capture_timeout(min(args.app_timeout, t_end - now))),
                       "--max-bytes", str(args.max_bytes)]
                env = {**os.environ, MARK: token, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=ROOT)
                running[app["name"]] = (proc, token, now, min(t_end, now + args.app_timeout), log)
                print(f"start {app['name']} ({len(running)} running, {t_end - now:.0f} s left)", flush=True)
            if not running:
                break  # nothing left, or too little time to start what is left
            time.sleep(0.5)
            now = time.monotonic()
            done = [n for n, w in running.items() if w[0].poll() is not None]
            late = [n for n, w in running.items() if w[0].poll() is None and now >= w[3]]
            if done:
                finish(done, None)
            if late:
                finish(late, "late")
    finally:
        if running:
            finish(list(running), "an interrupt")
    for app in todo:
        rows[app["name"]] = {"name": app["name"], "label": LABEL, "kernels": [], "not_started": "the deadline"}
    return [rows[a["name"]] for a in apps if a["name"] in rows]


def _read_row(path: Path, name: str, stopped: str | None, seconds: float) -> dict[str, Any]:
    try:
        row: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        row = {"name": name, "label": LABEL, "kernels": [], "error": "the worker wrote no result (see its log)"}
    row.setdefault("seconds", round(seconds, 1))
    if stopped:
        row["stopped"] = f"stopped at {stopped}"
        for k in row.get("kernels", []):
            if not k.get("captured"):
                k.setdefault("why", f"not captured: stopped at {stopped}")
                k["captured"] = False
    return row


# ---------------------------------------------------------------- summary

def newest_static() -> Path | None:
    runs = sorted((ROOT / "bench" / "results" / "fidelity").glob("*-cpu/fidelity_catalog.json"))
    return runs[-1] if runs else None


def summarize(static: list[dict[str, Any]] | None, captured: list[dict[str, Any]] | None, meta: dict[str, Any]) -> dict[str, Any]:
    """The totals of issue 29 (None where that part did not run)."""
    s: dict[str, Any] = {"commit": meta["commit"], "label": meta.get("label", LABEL), "date": meta["date"],
                         "gpu": meta.get("gpu", "")}
    if static is not None:
        ks = [k for a in static for k in a["kernels"]]
        s.update(applications=len(static), kernels_found=sum(int(a.get("kernels_found", 0)) for a in static),
                 kernels_examined=len(ks), extracted=sum(1 for k in ks if k.get("extracted")),
                 compile_alone=sum(1 for k in ks if k.get("compiles_alone")),
                 no_fill_in=sum(1 for k in ks if k.get("extracted") and not k.get("fill_in")),
                 runnable_no_edits=sum(1 for k in ks if k.get("runnable")),
                 compile_time_sized=sum(1 for k in ks if k.get("compile_time_sized")),
                 compile_time_sized_runnable=sum(1 for k in ks if k.get("compile_time_sized") and k.get("runnable")),
                 static_commit=meta.get("static_commit", meta["commit"]))
    else:
        s.update({k: None for k in ("kernels_found", "extracted", "compile_alone", "runnable_no_edits", "compile_time_sized")})
    if captured is not None:
        ks = [k for a in captured for k in a.get("kernels", [])]
        compared = [k for k in ks if k.get("captured")]
        tot = {v: sum(int(k["summary"].get(v, 0)) for k in compared) for v in ("equal", "FILL-IN", "wrong", "unknown")}
        s.update(capture_applications=len(captured), kernels_tried=len(ks), kernels_compared=len(compared),
                 values_equal=tot["equal"], values_fillin=tot["FILL-IN"], values_wrong=tot["wrong"], values_unknown=tot["unknown"],
                 kernels_with_wrong=sum(1 for k in compared if k["summary"].get("wrong")))
        if static is None:
            s["kernels_found"] = sum(int(a.get("kernels_found", 0)) for a in captured)
    else:
        s.update(kernels_compared=None, values_equal=None, values_fillin=None, values_wrong=None)
    return s


def markdown(summary: dict[str, Any], static: list[dict[str, Any]] | None, captured: list[dict[str, Any]] | None) -> str:
    s = summary
    held_out = s.get("label") == HELD_OUT
    title = "the held-out split of the catalogue" if held_out else "the development catalogue"
    lines = [f"# Static values against the truth on {title} ({s.get('label', LABEL)})", "",
             f"{s.get('gpu') or 'no GPU (CPU part)'}, {s['date']}, commit {s['commit']}"
             + (f" (CPU part at {s['static_commit']})" if s.get("static_commit") not in (None, s["commit"]) else ""), "",
             "| figure | value |", "|---|---|"]
    for k in ("applications", "kernels_found", "kernels_examined", "extracted", "compile_alone", "no_fill_in", "runnable_no_edits",
              "compile_time_sized", "compile_time_sized_runnable", "capture_applications", "kernels_tried", "kernels_compared",
              "values_equal", "values_fillin", "values_wrong", "values_unknown", "kernels_with_wrong"):
        if k in s:
            lines.append(f"| {k} | {s[k] if s[k] is not None else 'not measured'} |")
    if captured is not None:
        lines += ["", "| application | kernels | captured | equal | FILL-IN | wrong | build s | run s | seconds | why not |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for a in captured:
            ks = a.get("kernels", [])
            cap = [k for k in ks if k.get("captured")]
            tot = {v: sum(int(k["summary"].get(v, 0)) for k in cap) for v in ("equal", "FILL-IN", "wrong")}
            whys = sorted({str(k.get("why", "")) for k in ks if not k.get("captured")})
            why = a.get("not_started") or a.get("error") or "; ".join(whys)
            lines.append(f"| {a['name']} | {len(ks)} | {len(cap)} | {tot['equal']} | {tot['FILL-IN']} | {tot['wrong']} | "
                         f"{a.get('build_s', '')} | {a.get('run_s', '')} | {a.get('seconds', '')} | {why[:160].replace('|', '/')} |")
        wrong = [(a["name"], k["kernel"], w) for a in captured for k in a.get("kernels", []) for w in k.get("wrong", [])]
        if wrong:
            lines += ["", "Wrong values:", ""] + [f"- {a} `{k}`: {w['value']} static {w['static']!r}, captured {w['captured']!r}"
                                                   for a, k, w in wrong]
    if static is not None and not held_out:  # held out: the totals only, nothing to read a kernel's defect from
        bad = [(a["name"], k) for a in static for k in a["kernels"] if not k.get("extracted") or not k.get("compiles_alone")]
        if bad:
            lines += ["", "Not extracted or not compiling alone:", ""]
            for name, k in bad:
                why = k.get("error") if not k.get("extracted") else k.get("compile_error", "")
                lines.append(f"- {name} `{k['kernel']}`: {'not extracted' if not k.get('extracted') else 'does not compile alone'}: "
                             f"{str(why)[:200]}")
    return "\n".join(lines) + "\n"


def _static_rows(src: Path | None, names: set[str], meta: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The CPU part's rows of these applications from a fidelity_catalog.json (its commit and path into `meta`)."""
    if src is None or not src.is_file():
        return None
    doc = json.loads(src.read_text())
    meta["static_commit"] = doc.get("commit", "unknown")
    meta["static_from"] = str(src)
    return [a for a in doc.get("static") or [] if a["name"] in names]


def merge(gpu_json: Path, static_json: Path | None, out: Path) -> int:
    """--merge: a GPU run's rows with a CPU part's, summarized again (the GPU run's commit, date and device kept)."""
    doc = json.loads(gpu_json.read_text())
    captured = doc.get("captured") or []
    meta = {k: doc[k] for k in ("date", "commit", "gpu") if k in doc}
    static = _static_rows(static_json, {a["name"] for a in captured}, meta)
    summary = summarize(static, captured, meta)
    write_result(out, "fidelity_catalog", {**doc, **meta, "summary": summary, "static": static})
    write_result(out, "fidelity_summary", summary, markdown(summary, static, captured))
    print(json.dumps(summary, indent=1))
    return 0


def collect(catalog: list[dict[str, Any]], runs: list[Path], out: Path, label: str = LABEL) -> int:
    """--collect: the CPU rows of several runs (each application once, the first run's row), in catalogue order."""
    rows: dict[str, dict[str, Any]] = {}
    for run in runs:
        for f in sorted((run / "apps").glob("*.json")):
            row = json.loads(f.read_text())
            if row.get("label", LABEL) != label:  # the two splits never mixed
                continue
            if "kernels_found" in row and all("captured" not in k for k in row.get("kernels", [])):  # a CPU row
                rows.setdefault(row["name"], row)
    static = [rows[a["name"]] for a in catalog if a["name"] in rows]
    meta = {"date": datetime.date.today().isoformat(), "commit": commit(), "gpu": "", "label": label,
            "collected_from": [str(r) for r in runs]}
    summary = summarize(static, None, meta)
    write_result(out, "fidelity_catalog", {**meta, "summary": summary, "static": static, "captured": None})
    write_result(out, "fidelity_summary", summary, markdown(summary, static, None))
    print(json.dumps(summary, indent=1))
    return 0


def gpu_name() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=30).stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps-dir", default=".gpu/apps", help="the laid-out applications (DIR/NAME/)")
    ap.add_argument("--catalog", default=str(ROOT / "bench" / "apps" / "catalog.toml"))
    ap.add_argument("--out", help="result directory")
    ap.add_argument("--apps", help="these development applications only (comma-separated)")
    ap.add_argument("--per-app", type=int, default=40, help="at most this many kernels an application, spread over its tree "
                    "(40: all 227 kernels the 72 development applications launch)")
    ap.add_argument("--jobs", type=int, default=1, help="CPU part: applications at a time")
    ap.add_argument("--no-build", action="store_true", help="CPU part: do not build the harness of MEPs with no FILL-IN")
    ap.add_argument("--capture", action="store_true", help="GPU part: capture and compare (one build and run an application)")
    ap.add_argument("--parallel", type=int, default=10, help="--capture: applications at a time")
    ap.add_argument("--deadline", type=float, default=420.0, help="--capture: seconds for everything")
    ap.add_argument("--app-timeout", type=float, default=300.0, help="--capture: seconds for one application")
    ap.add_argument("--max-bytes", type=_bytes, default=1 << 30,
                    help="--capture: buffer bytes a captured launch may hold (a number, or 512M, 3G as s2s capture takes)")
    ap.add_argument("--static", help="--capture: the CPU part's fidelity_catalog.json (default: the newest committed)")
    ap.add_argument("--merge", metavar="GPU_JSON", help="no run: the summary of a --capture run's fidelity_catalog.json with "
                    "the CPU part of --static (e.g. one committed after the GPU run), into --out")
    ap.add_argument("--collect", nargs="+", metavar="RUN_DIR", help="no run: one CPU result from the per-application rows "
                    "(RUN_DIR/apps/NAME.json) of CPU runs over parts of the catalogue, into --out (S2S_COMMIT: their commit)")
    ap.add_argument("--held-out", action="store_true", help="CPU part (or --collect) over the held-out split's applications "
                    "instead, its figures labelled and written apart (reported beside the development corpus's; never "
                    "read to tune anything)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--row", help=argparse.SUPPRESS)
    ap.add_argument("--capture-timeout", type=float, default=300.0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker_main(args)
    if not args.out:
        ap.error("--out is required")
    out, apps_dir = Path(args.out), Path(args.apps_dir)
    if args.merge:
        return merge(Path(args.merge), Path(args.static) if args.static else newest_static(), out)
    label = HELD_OUT if args.held_out else LABEL
    if args.held_out and (args.capture or args.merge):
        ap.error("--held-out is for the CPU part and --collect")
    if args.collect:
        return collect(load(Path(args.catalog)), [Path(d) for d in args.collect], out, label)
    args.apps_dir = apps_dir.resolve()
    apps = (heldout_apps if args.held_out else dev_apps)(Path(args.catalog), args.apps_dir, args.apps)
    if not apps:
        print(f"no {label} application laid out in {apps_dir}", file=sys.stderr)
        return 2
    meta = {"date": datetime.date.today().isoformat(), "commit": commit(), "gpu": gpu_name() if args.capture else "",
            "label": label}
    static: list[dict[str, Any]] | None = None
    captured: list[dict[str, Any]] | None = None
    if args.capture:
        out.mkdir(parents=True, exist_ok=True)
        static = _static_rows(Path(args.static) if args.static else newest_static(), {a["name"] for a in apps}, meta)
        found = {a["name"]: int(a.get("kernels_found", 0)) for a in static or []}
        for a in apps:  # the longest first: its catalogue run, and a few seconds a kernel to extract and collect
            a["cost_s"] = float(a.get("run_seconds") or 0.0) + 8.0 * min(args.per_app, found.get(a["name"], 6))
        captured = capture_part(apps, args, out)
    else:
        static = static_part(apps, args.apps_dir, args.per_app, not args.no_build, args.jobs, out, label)
    summary = summarize(static, captured, meta)
    doc = {**meta, "settings": {k: getattr(args, k) for k in ("per_app", "parallel", "deadline", "app_timeout", "max_bytes")},
           "summary": summary, "static": static, "captured": captured}
    write_result(out, "fidelity_catalog", doc)
    write_result(out, "fidelity_summary", summary, markdown(summary, static, captured))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
