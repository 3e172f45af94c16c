"""Sequences in `s2s auto TREE --build-cmd B --run-cmd R`: the launch-bound host loops of the measured profile that hold
a large share of its GPU time, each captured as a sequence MEP, replayed, and, where a graph form or the persistent
form wins, made that form in auto's staged copy of the tree (the copy single-kernel winners go to), so that the combined diff, the
application's rebuild and rerun with its output check and the before/after measurement cover it.

    candidates(found, total_ms, min_share) -> list[Sequence]
    run_sequences(root, staged, index, launches, build_cmd, run_cmd, work, ...) -> list[dict]   (auto-report's
                                                                                   `sequence_results`)
    with loop_times(path): ...; read_loop_times(path) -> {label: [ms, ...]}

The graphed loop's runtime times the loop when S2S_GRAPH_TIMES names a file (events on the default stream around the
whole loop, gaps included): auto sets it around its runs of the application after reintegration, so a graphed loop,
whose launches the instrumented run no longer sees, has a measured time after.

Every failure is the loop's status, never an exception out of auto: a capture or replay that fails, a check that
fails, no form that wins with its instantiation (s2s.sequence.choice), a loop the host code cannot graph, a launch
removed by a kernel's reintegration since. Only CUDA <<<>>> loops become graphs; an OpenCL loop is reported.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write
from s2s.base.records import Index, LaunchSite
from s2s.capture.profile import Launch as ProfiledLaunch
from s2s.capture.sequences import Sequence

from .choice import choose_form, estimated_runs, form_speedup, with_graph_run

MIN_SHARE = 0.10  # of the profile's GPU time, for a loop to be worth a capture and a replay
MAX_LOOPS = 2
REPS = 10

TIMES_ENV = "S2S_GRAPH_TIMES"
DIRECT_ENV = "S2S_GRAPH_DIRECT"  # a graphed loop launches as the original did (its time before, measured alike)

Replay = Callable[[Path, int], dict[str, Any]]


@contextlib.contextmanager
def loop_times(path: Path) -> Iterator[None]:
    """Graphed loops run inside (in child processes) append their times to `path`."""
    old = os.environ.get(TIMES_ENV)
    os.environ[TIMES_ENV] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(TIMES_ENV, None)
        else:
            os.environ[TIMES_ENV] = old


def read_loop_times(path: Path) -> dict[str, list[float]]:
    """Each loop's time (ms) per run of the application, by its label (FILE:LINE of the loop), in the order the runs
    made them: the runs of the loop one application process made (`graph_loop LABEL MS LAUNCHES PID`), summed."""
    per_run: dict[str, dict[str, float]] = {}
    if not path.is_file():
        return {}
    for n, line in enumerate(path.read_text(errors="replace").splitlines()):
        w = line.split()
        if len(w) in {4, 5} and w[0] == "graph_loop":
            try:
                ms = float(w[2])
            except ValueError:
                continue
            runs = per_run.setdefault(w[1], {})
            key = w[4] if len(w) == 5 else f"line{n}"
            runs[key] = runs.get(key, 0.0) + ms
    return {label: list(runs.values()) for label, runs in per_run.items()}


def candidates(found: list[Sequence], total_ms: float, min_share: float = MIN_SHARE) -> list[Sequence]:
    """The launch-bound loops holding at least `min_share` of the GPU time, the most first (at most MAX_LOOPS)."""
    total = total_ms or 1.0
    return [q for q in found if q.launch_bound and q.gpu_ms / total >= min_share][:MAX_LOOPS]


def _loop_name(q: Sequence) -> str:
    """FILE:FUNCTION@LINE (KERNELS): LINE the outermost loop's."""
    return f"{q.loop_id} ({', '.join(q.kernels)})"


def _staged_sites(staged: Path, root_index: Index, q: Sequence) -> list[LaunchSite] | str:
    """The loop's launch sites in the staged copy: of each (function, kernel), the launches in the file's order, as
    many as the original has (a kernel's reintegration moves lines and may change a launch's configuration, which the
    graph takes as it is written); a reason when they do not pair up."""
    from s2s.scan.tree import scan_tree

    def by_key(sites: list[LaunchSite]) -> dict[tuple[str, str], list[LaunchSite]]:
        out: dict[tuple[str, str], list[LaunchSite]] = {}
        for s in sorted(sites, key=lambda s: s.start_byte):
            out.setdefault((s.enclosing_function, s.kernel), []).append(s)
        return out

    was = by_key([s for s in root_index.launches if s.file == q.file])
    now = by_key([s for s in scan_tree(staged).launches if s.file == q.file])
    found: list[LaunchSite] = []
    for s in (s for s in root_index.launches if f"{s.file}:{s.line}" in q.sites):
        key = (s.enclosing_function, s.kernel)
        if len(now.get(key, [])) != len(was[key]):
            return (f"the staged copy launches {s.kernel} from {s.enclosing_function} {len(now.get(key, []))} time(s), "
                    f"the measured tree {len(was[key])}: the loop is not the one measured")
        found.append(now[key][was[key].index(s)])
    return sorted(found, key=lambda s: s.start_byte)


def _graph_staged(staged: Path, root_index: Index, q: Sequence, body: int, keep: bool = False,
                  persistent: Path | None = None) -> tuple[str, str]:
    """The loop made a body graph in the staged copy (with `persistent`, that sequence MEP's persistent form): ("", its
    label) when done, else (why not, "")."""
    import json

    from .host_graph import graph_loop
    from .host_persistent import persistent_loop
    from .persistent import plan_from_dict

    sites = _staged_sites(staged, root_index, q)
    if isinstance(sites, str):
        return sites, ""
    path = staged / q.file
    if persistent is not None:
        plan = plan_from_dict(json.loads((persistent / "sequence.json").read_text()).get("persistent", {}))
        edit = persistent_loop(path.read_bytes(), sites, plan)
    else:
        edit = graph_loop(path.read_bytes(), sites, body=body, keep=keep)
    if not edit.applies:
        return f"the loop cannot be {'made persistent' if persistent else 'graphed'}: {edit.reason}", ""
    atomic_write(path, edit.data)
    return "", f"{q.file}:{edit.line}"


def regraph(staged: Path, index: Index, found: list[Sequence], row: dict[str, Any]) -> str:
    """A loop of run_sequences' `row` graphed again in a fresh staged copy, in the form and body it won with; why
    not, or ""."""
    q = next((q for q in found if _loop_name(q) == row["loop"]), None)
    if q is None or not row.get("body"):
        return "the loop is not among the measured ones any more"
    try:
        why, label = _graph_staged(staged, index, q, int(row["body"]), keep=row.get("form") == "graph_run",
                                   persistent=Path(row["mep"]) if row.get("form") == "persistent" else None)
    except UserError as err:
        return err.one_line()
    if not why:
        row["label"] = label
    return why


def run_sequences(root: Path, staged: Path, index: Index, launches: list[ProfiledLaunch], found: list[Sequence],
                  total_ms: float, build_cmd: str, run_cmd: str, work: Path, *, min_speedup: float = 1.05,
                  min_share: float = MIN_SHARE, timeout: float = 1800.0, replay: Replay | None = None,
                  log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """One row per loop considered: loop, kernels, gpu share, mep, form, speedup (on the replay, with instantiation),
    replay_speedups (every mode, without), status. Rows with status "reintegrated ..." changed `staged`."""
    from .capture import capture_sequence

    if replay is None:
        from .replay import replay as replay_harness

        replay = replay_harness
    rows: list[dict[str, Any]] = []
    total = total_ms or 1.0
    for i, q in enumerate(candidates(found, total_ms, min_share)):
        row: dict[str, Any] = {"loop": _loop_name(q), "file": q.file, "function": q.function, "kernels": q.kernels,
                               "launches": q.launches, "gpu_ms": round(q.gpu_ms, 6), "gpu_share": round(q.gpu_ms / total, 4),
                               "mep": "", "form": "", "speedup": None, "replay_speedups": {}, "status": ""}
        rows.append(row)
        kinds = {s.kind for s in index.launches if f"{s.file}:{s.line}" in q.sites}
        if kinds != {"chevron"}:
            row["status"] = (f"reported, not transformed: only CUDA <<<>>> loops become graphs (launches here: "
                             f"{', '.join(sorted(kinds)) or 'unknown'})")
            continue
        mep = work / f"seq-{i}-{q.function}"
        row["mep"] = str(mep)
        log(f"capturing the loop {row['loop']}: {q.launches} launches, {100 * row['gpu_share']:.0f}% of the GPU time")
        try:
            got = capture_sequence(root, build_cmd, run_cmd, mep, function=q.loop_id, profile=launches,
                                   index=index, timeout=timeout)
            log(f"replaying {mep.name}: original, whole-loop graph, body graph, persistent where it applies")
            result = replay(mep, REPS)
        except UserError as err:
            row["status"] = f"failed: {err.one_line()}"
            continue
        row["replay_speedups"] = dict(result.get("speedup", {}))
        row["checks"] = {k: v.get("ok") if isinstance(v, dict) else v for k, v in result.get("checks", {}).items()}
        # the body graph: its one small instantiation is paid again each time the application runs the loop; the
        # whole-loop graph's (10,000+ nodes) would be too, unless the window is a whole run of a loop the application
        # runs again and again: then a kept graph (graph_run) is instantiated once for all the runs
        result = with_graph_run(result, estimated_runs(q.launches, len(got.window.launches), got.window.whole_run))
        form, why = choose_form(result, min_speedup, forms=("graph_body", "graph_run", "persistent"))
        if not form:
            row["status"] = f"not reintegrated: {why}"
            continue
        row["form"], row["speedup"] = form, round(form_speedup(result, form), 4)
        body = len(got.window.launches) if form == "graph_run" else got.variation.body_launches
        row["body"] = body
        try:
            why_not, row["label"] = _graph_staged(staged, index, q, body, keep=form == "graph_run",
                                                  persistent=mep if form == "persistent" else None)
        except UserError as err:
            why_not = err.one_line()
        row["status"] = f"not reintegrated: {why_not}" if why_not else f"reintegrated ({row['form']}; {why})"
    return rows
