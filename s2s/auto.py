"""`s2s auto TREE`: scan, extract the top hotspots, optimize each, reintegrate all winners as one diff."""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from s2s.base.devicelock import OwnClock
from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write
from s2s.capture.verify import hold_to_app_data
from s2s.optimize.loop import Options, optimize
from s2s.reintegrate.splice import apply_in_place, plan


@dataclass
class AutoResult:
    rows: list[tuple[str, str, str, str, str, str]] = field(default_factory=list)
    any_win: bool = False
    diff: str = ""


def _copy_tree(src: Path, dst: Path) -> None:
    from s2s.base.paths import symlink_loop

    loop = symlink_loop(src)
    if loop is not None:
        raise UserError(f"a symlink loop in the tree ({loop}); s2s auto copies the tree and would follow it forever",
                        file=str(src), hint="remove or replace that link")
    if dst.exists():
        shutil.rmtree(dst)
    from s2s.base.treefiles import copy_tree, owner_writable

    copy_tree(src, dst, (".git", "build", "*.o", ".s2s-backup"))
    owner_writable(dst)  # a read-only tree's copy takes the reintegrated kernels and the build's outputs


def _check_work(root: Path, work: Path) -> None:
    """auto writes its copy of the tree to WORK/tree (removing what was there) and its MEPs beside it: WORK must neither
    lie in the tree nor hold it (`--work` the tree's parent, the tree named `tree`, removed the user's tree)."""
    from s2s.base.paths import inside

    if inside(work, root):
        raise UserError("--work is inside the application's tree, which auto never writes", file=str(work),
                        hint="choose a directory outside the tree")
    if inside(root, work):
        raise UserError(f"--work holds the application's tree ({root}); auto fills it with copies and MEPs",
                        file=str(work), hint="choose a directory outside the tree")


P = ParamSpec("P")
R = TypeVar("R")


def _holding_work(fn: Callable[P, R]) -> Callable[P, R]:
    """Run `fn(tree, ..., work=WORK, ...)` holding WORK's lock: two autos on one --work removed each other's copy of the
    tree (WORK/tree) and mixed their MEPs and diffs. A WORK made here that got nothing but the lock is removed again.
    Every MEP's harness builds share one compiled harness run, in WORK/build-cache (harness_runtime)."""
    import functools

    from s2s.base.meplock import LOCK, mep_lock
    from s2s.mep.backends.harness_runtime import shared_in

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        work, root = Path(str(kwargs["work"])).resolve(), Path(str(args[0])).resolve()
        if not root.is_dir():
            return fn(*args, **kwargs)  # it says what is wrong with the tree
        _check_work(root, work)
        made = not work.exists()
        work.mkdir(parents=True, exist_ok=True)
        try:
            with mep_lock(work, what="s2s auto", place="work directory"), shared_in(work / "build-cache"):
                return fn(*args, **kwargs)
        finally:
            if made and work.is_dir() and all(p.name == LOCK for p in work.iterdir()):
                shutil.rmtree(work, ignore_errors=True)

    return wrapper


def _tree_diff(orig: Path, new: Path) -> bytes:
    """The unified diff of every file that differs, in each file's own bytes (a Latin-1 file stays Latin-1)."""
    from s2s.reintegrate.diff import tree_diff

    return tree_diff(orig, new)


def _progress(log: Callable[[str], None]) -> Callable[[dict[str, Any]], None]:
    """The optimization loop's progress as auto's log lines: kernel, candidate, verdict, evaluations, the time left."""
    from s2s.optimize.progress import line

    return lambda ev: log("  " + line(ev))


def _budget_left(options: Options, clock: OwnClock, reserve_s: float = 0.0) -> Options:
    """--time-budget counts from auto's start over every kernel, the top kernel first: each optimization gets what the
    kernels before it (and the stages before it) left, less `reserve_s` (what finishing the command needs after the
    optimizations: `_Finish`); once spent, the loop starts no candidate and says so. The budget counts the tool's own
    time: seconds blocked by another process's hold on the device are left out (`devicelock.OwnClock`)."""
    from dataclasses import replace

    if options.time_budget_s is None:
        return options
    return replace(options, time_budget_s=max(1e-3, options.time_budget_s - clock.own() - reserve_s))


def _seconds_left(options: Options, clock: OwnClock) -> float | None:
    """The tool's own seconds --time-budget has left (None: no budget)."""
    return None if options.time_budget_s is None else options.time_budget_s - clock.own()


@dataclass
class _Finish:
    """What the stages after the optimizations cost, estimated from the profile's instrumented build and run (an
    instrumented run is at least as long as a plain one): the sequence loops' capture and replay (an instrumented build
    and run, and replays of the loop), the before/after comparison (two builds, a warm-up run each, `runs` timed runs
    each) and the reintegrated application's instrumented build and run. With --time-budget the optimizations leave
    the cheapest finish (one timed run each) and the comparison takes as many runs as the budget then has room for,
    so that the budget bounds the whole command, not only the optimizations."""
    build_s: float
    run_s: float
    runs: int
    loops: bool  # a sequence loop qualifies for a capture and a replay

    SEQUENCE_REPLAY_S = 30.0  # the loop's harness builds and replays, beside its instrumented build and run

    def sequences_s(self) -> float:
        return self.build_s + self.run_s + self.SEQUENCE_REPLAY_S if self.loops else 0.0

    def compare_s(self, runs: int) -> float:
        return 2 * self.build_s + (2 + 2 * runs) * self.run_s + self.build_s + self.run_s

    def reserve_s(self) -> float:
        return self.sequences_s() + self.compare_s(1)

    def runs_within(self, left_s: float | None) -> int:
        """The most timed runs each (at least one, at most `runs`) whose comparison fits in `left_s` seconds."""
        if left_s is None:
            return self.runs
        fit = [n for n in range(1, self.runs + 1) if self.compare_s(n) <= left_s]
        return max(fit) if fit else 1


def _start_all(root: Path, chosen: list[str], work: Path, overrides: dict[str, str] | None, options: Options,
               pool: ThreadPoolExecutor, log: Callable[[str], None],
               build_cmd: str | None = None) -> dict[str, tuple[Any, Future[Any] | None]]:
    """On a cluster (--cluster with several workers): extract every kernel first, then optimize them all at once,
    one thread each coordinating its MEP's evaluations on the shared workers. Extraction errors are kept for later."""
    from s2s.extract.mep_writer import make_mep

    out: dict[str, tuple[Any, Future[Any] | None]] = {}
    for spec in chosen:
        name = spec.split(":")[-1]
        mep_dir = work / f"mep-{name}"
        try:
            made = make_mep(str(root), spec, str(mep_dir), overrides=overrides, build_cmd=build_cmd)
        except UserError as err:
            out[spec] = (err, None)
            continue
        running = None
        if not made[1].unfilled():
            log(f"optimizing {made[2].kernel.qualified} on the cluster")
            running = pool.submit(optimize, mep_dir, options, progress=_progress(log))
        out[spec] = (made, running)
    return out


@_holding_work
def run_auto(tree: str, *, top: int, profile: str | None, work: Path, diff_path: Path, options: Options,
             kernels: list[str] | None = None, overrides: dict[str, str] | None = None,
             log: Callable[[str], None] = print, min_speedup: float = 1.05,
             app: tuple[str, str] | None = None, app_timeout: float = 1800.0) -> AutoResult:
    """`app` = (build command, run command): every winner is then held to the application's captured data
    (`s2s capture --into`, `s2s verify`) before it is reintegrated."""
    import time

    from s2s.extract.mep_writer import make_mep
    from s2s.scan.ranking import profile_ranking, static_estimate
    from s2s.scan.tree import scan_tree

    t_start = time.monotonic()
    own_clock = OwnClock(t_start)
    root = Path(tree).resolve()
    index = scan_tree(root)
    spots = profile_ranking(index, profile)[0] if profile else static_estimate(index)
    if kernels:
        chosen = [f"{h.kernel.file}:{h.kernel.name}" for h in spots if h.kernel.name in kernels or h.kernel.qualified in kernels]
    else:
        chosen = [f"{h.kernel.file}:{h.kernel.name}" for h in spots if h.kernel.language in {"cuda", "hip", "opencl"}][:top]
    if not chosen:
        raise UserError("no kernels to optimize", file=str(root))
    work.mkdir(parents=True, exist_ok=True)
    staged = work / "tree"
    _copy_tree(root, staged)
    result = AutoResult()
    log(f"ranking: {spots[0].source if spots else 'estimate'}; optimizing {', '.join(chosen)}")
    slots = options.executor.slots if options.executor is not None else 1
    pool = ThreadPoolExecutor(max_workers=slots) if slots > 1 else None
    build_cmd = app[0] if app is not None else None  # the build's own flags reach extraction (a dry run of it)
    started = _start_all(root, chosen, work, overrides, options, pool, log, build_cmd) if pool is not None else {}
    for spec in chosen:
        name = spec.split(":")[-1]
        mep_dir = work / f"mep-{name}"
        early, running = started.get(spec, (None, None))
        try:
            if isinstance(early, UserError):
                raise early
            _out, manifest, ex = early or make_mep(str(root), spec, str(mep_dir), overrides=overrides, build_cmd=build_cmd)
        except UserError as err:
            result.rows.append((name, spec, "-", "-", "-", f"extract failed: {err.message}"))
            continue
        where = f"{ex.kernel.file}:{ex.kernel.line}"
        if manifest.unfilled():
            missing = ", ".join(u.split(":")[0] for u in manifest.unfilled())
            result.rows.append((ex.kernel.qualified, where, str(mep_dir), "-", "-", f"FILL-IN {missing}: "
                                "--build-cmd/--run-cmd would capture them from a run"))
            continue
        log(f"optimizing {ex.kernel.qualified} ({where})")
        try:
            outcome = running.result() if running is not None else optimize(
                mep_dir, _budget_left(options, own_clock), progress=_progress(log))
        except UserError as err:
            result.rows.append((ex.kernel.qualified, where, str(mep_dir), "-", "-", f"optimize failed: {err.message}"))
            continue
        if not outcome.best_id or outcome.best_speedup < min_speedup:
            result.rows.append((ex.kernel.qualified, where, str(mep_dir), outcome.best_id or "-", f"{outcome.best_speedup:.2f}x",
                                f"not reintegrated: below {min_speedup:.2f}x, within timing noise"))
            continue
        held = ""
        if app is not None:
            log(f"holding {ex.kernel.qualified}'s winner to the application's data ({app[1]!r})")
            try:
                got = hold_to_app_data(root, spec, mep_dir, app[0], app[1], timeout=app_timeout)
            except UserError as err:
                result.rows.append((ex.kernel.qualified, where, str(mep_dir), outcome.best_id, f"{outcome.best_speedup:.2f}x",
                                    f"not reintegrated: the application's data could not be captured: {err.one_line()}"))
                continue
            failed = "; ".join(f"{c.id} ({c.verdict}: {c.message[:160]})" for c in got.checked if c.verdict != "ok")
            best = got.best
            if best is None or (best.speedup or 0) < min_speedup:
                result.rows.append((ex.kernel.qualified, where, str(mep_dir), outcome.best_id, f"{outcome.best_speedup:.2f}x",
                                    f"not reintegrated: no winner >= {min_speedup:.2f}x passed on the application's data ({failed})"))
                continue
            outcome.best_id, outcome.best_origin, outcome.best_speedup = best.id, best.origin, best.speedup or 0.0
            held = "; held to the application's data" + (f" (failed there: {failed})" if failed else "")
        try:
            p = plan(mep_dir, "best", str(staged))
            apply_in_place(p, None, None)
            status = "reintegrated" + held + (f"; by hand: {'; '.join(p.manual)}" if p.manual else "")
        except UserError as err:
            status = f"reintegration failed: {err.message}"
        result.any_win = True
        result.rows.append((ex.kernel.qualified, where, str(mep_dir), f"{outcome.best_id} {outcome.best_origin}",
                            f"{outcome.best_speedup:.2f}x", status))
    if pool is not None:
        pool.shutdown(cancel_futures=True)
    shutil.rmtree(staged / ".s2s-backup", ignore_errors=True)
    raw = _tree_diff(root, staged)
    result.diff = raw.decode("utf-8", "replace")
    atomic_write(diff_path, raw)
    return result


# -- capture first: `s2s auto TREE --build-cmd B --run-cmd R` ------------------------------------------------------
@dataclass
class AppAutoResult:
    """What `s2s auto` with build and run commands measured and did; `as_dict` is its JSON report."""
    profile: list[dict[str, Any]] = field(default_factory=list)
    profile_how: str = ""
    kernels: list[dict[str, Any]] = field(default_factory=list)
    app: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    any_win: bool = False
    diff: str = ""
    gpu: dict[str, Any] = field(default_factory=dict)  # the application's GPU time before and after (instrumented runs)
    sequences: list[dict[str, Any]] = field(default_factory=list)  # host loops of launches (s2s.capture.sequences)
    sequence_results: list[dict[str, Any]] = field(default_factory=list)  # loops captured, replayed, graphed (s2s.sequence.in_auto)
    stages: dict[str, float] = field(default_factory=dict)  # the tool's wall time per stage, seconds; device_wait: of those, blocked by another process's hold on the device
    app_runs: list[dict[str, Any]] = field(default_factory=list)  # every build and run of the application

    def as_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "profile_how": self.profile_how, "kernels": self.kernels, "app": self.app,
                "gpu": self.gpu, "sequences": self.sequences,
                "sequence_results": self.sequence_results, "stages": {k: round(v, 3) for k, v in self.stages.items()}, "app_runs": self.app_runs,
                "notes": self.notes, "reintegrated": self.any_win}


def _spec_of(index: Any, name: str, sites: list[str]) -> str | None:
    """FILE:NAME of the kernel a profile names ('ns::k' or 'k'), or None when the tree does not define it; where
    several files define it (a tree with two versions of one program), the one whose file launched it."""
    short = name.split("::")[-1]
    found = [k for k in index.kernels if k.qualified == name] or [k for k in index.kernels if k.name == short]
    launched = {s.rsplit(":", 1)[0] for s in sites}
    found = [k for k in found if k.file in launched] or found
    return f"{found[0].file}:{found[0].name}" if found else None


class _Stages:
    """Wall time per stage of one auto run, added up (`with stages("capture"): ...`)."""

    def __init__(self, into: dict[str, float]) -> None:
        self.into = into

    def __call__(self, name: str) -> Any:
        import contextlib
        import time

        @contextlib.contextmanager
        def timed() -> Any:
            t0 = time.monotonic()
            try:
                yield
            finally:
                self.into[name] = self.into.get(name, 0.0) + time.monotonic() - t0
        return timed()


AUTO_MAX_BYTES = 8 << 30


def capture_limit(work: Path) -> int:
    """How much buffer data (before and after) one captured launch may hold in `auto`: 8 GiB (real applications' hot
    launches often touch 2-8 GiB: `s2s capture`'s 2 GiB default refused them), or a quarter of the free space where
    the work directory is when that is less (the MEP holds the data; its candidates share them)."""
    free = shutil.disk_usage(work).free
    return max(1 << 20, min(AUTO_MAX_BYTES, free // 4))


def _profile_runs(purpose: str, prof: Any) -> list[dict[str, Any]]:
    if getattr(prof, "reused", False):  # no build, no run: an earlier auto's profile of the same tree and commands
        return []
    return [{"purpose": purpose, "what": "instrumented build", "seconds": round(prof.build_s, 3)},
            {"purpose": purpose, "what": "instrumented run", "seconds": round(prof.run_s, 3)}]


@_holding_work
def run_auto_app(tree: str, build_cmd: str, run_cmd: str, *, top: int, work: Path, diff_path: Path, options: Options,
                 kernels: list[str] | None = None, overrides: dict[str, str] | None = None, check_cmd: str | None = None,
                 runs: int = 3, output_rtol: float = 1e-5, log: Callable[[str], None] = print,
                 min_speedup: float = 1.05, timeout: float = 1800.0, max_bytes: int | None = None,
                 with_sequences: bool = True, sequence_replay: Any = None) -> AppAutoResult:
    """Capture first: profile the application in one instrumented run, capture a steady-state launch of every top
    kernel in one more instrumented build and run, optimize each on its data, reintegrate the winners into a copy, rebuild and rerun the application
    before and after, and measure the reintegrated application's GPU time in a second instrumented run. The user's
    tree is only read; the work directory and the diff are written. A diff is written only when the reintegrated
    application's output is unchanged. `with_sequences`: the launch-bound loops holding a large share of the GPU time
    are captured as sequence MEPs too and, where the body graph wins on their replay, graphed in the same copy
    (s2s.sequence.in_auto; `sequence_replay` stands in for the harness's replay in tests)."""
    import time

    from s2s.capture import KernelCapture, capture, capture_kernels
    from s2s.capture.hipcc import hipcc_on_path, uses_hip
    from s2s.capture.profile import measure
    from s2s.scan.tree import scan_tree

    root = Path(tree).resolve()
    if not root.is_dir():
        raise UserError("auto with --build-cmd/--run-cmd needs the application's directory", file=str(tree))
    work = Path(work).resolve()
    t_start = time.monotonic()
    own_clock = OwnClock(t_start)
    work.mkdir(parents=True, exist_ok=True)
    max_bytes = capture_limit(work) if max_bytes is None else max_bytes
    result = AppAutoResult()
    stage = _Stages(result.stages)
    with stage("scan"):
        index = scan_tree(root)
    hip = uses_hip(root, index.launches, (k.language for k in index.kernels))
    with hipcc_on_path(hip) as hip_note:  # a HIP application's hipcc where ROCm is not installed
        if hip_note:
            log(hip_note)
        log(f"profiling {root} (instrumented copy: {build_cmd!r}, then {run_cmd!r})")
        with stage("profile"):
            prof = measure(root, work / "profile", build_cmd, run_cmd, timeout=timeout, launches=list(index.launches),
                           kernel_names={k.name for k in index.kernels}, reuse=True)
        result.profile, result.profile_how, result.notes = [k.as_dict() for k in prof.kernels], prof.how, list(prof.notes)
        if prof.reused:
            log(prof.notes[-1])
        result.notes += [hip_note] if hip_note else []
        result.app_runs += _profile_runs("profile", prof)
        from s2s.capture.sequences import sequences

        loops = sequences(prof.launches, list(index.launches))
        result.sequences = [q.as_dict() for q in loops]
        for q in result.sequences[:3]:
            log(f"  loop in {q['function']} ({q['file']}): {', '.join(q['kernels'][:4])}, {q['launches']} launches, "
                f"{q['mean_launch_us']:.1f} us of GPU time a launch" + (" (launch-bound)" if q["launch_bound"] else ""))
        total = prof.total_ms or 1.0
        from s2s.sequence.in_auto import candidates as loop_candidates

        finish = _Finish(prof.build_s, prof.run_s, runs, with_sequences and bool(loop_candidates(loops, prof.total_ms)))
        for k in prof.kernels:
            log(f"  {k.kernel}: {k.total_ms:.3f} ms in {k.launches} launch(es) ({100 * k.total_ms / total:.1f}%)")
        wanted = [k for k in prof.kernels if not kernels or k.kernel in kernels or k.kernel.split("::")[-1] in kernels]
        # the top kernels the tree defines: a library's kernel (CUB, Thrust) the run launched is listed, not optimized
        library = [k.kernel for k in wanted if _spec_of(index, k.kernel, k.sites) is None]
        if library:
            result.notes.append(f"launched but not defined in the tree's sources (a library's?), not optimized: {', '.join(library[:8])}")
        own = [k for k in wanted if k.kernel not in library]
        chosen = own if kernels else own[:top]
        if not chosen:
            raise UserError("auto: none of the kernels asked for was launched by the run command" if kernels else
                            "auto: the run launched no kernel that the tree's sources define", file=str(root))
        staged = work / "tree"
        _copy_tree(root, staged)
        report = work / "auto-report.json"
        specs: list[str] = []
        for k in chosen:
            spec = _spec_of(index, k.kernel, k.sites)
            assert spec is not None
            specs.append(spec)
            result.kernels.append({"kernel": k.kernel, "gpu_ms": round(k.total_ms, 6), "launches": k.launches,
                                   "launch": k.steady_launch(), "mep": str(work / f"mep-{spec.rsplit(':', 1)[-1].replace('::', '_')}"),
                                   "winner": "", "speedup": None, "status": ""})
        _write_report(report, result)
        # every chosen kernel at its steady-state launch, from one instrumented build and run
        log("capturing " + ", ".join(f"{row['kernel']} at its launch {row['launch']} of {row['launches']}" for row in result.kernels)
            + " (one instrumented build and run)")
        t0 = time.monotonic()
        captured: list[Any]
        try:
            with stage("capture"):
                cap = capture_kernels(root, [KernelCapture(spec, launch=row["launch"], output=row["mep"])
                                             for spec, row in zip(specs, result.kernels)], build_cmd, run_cmd,
                                      timeout=timeout, overrides=overrides, max_bytes=max_bytes)
            captured = list(cap.results)
            timing = {"build_s": round(cap.build_s, 3), "run_s": round(cap.run_s, 3)}
        except UserError as err:  # the build or the run failed: no kernel was captured
            captured, timing = [err] * len(chosen), {}
        result.app_runs.append({"purpose": "capture", "what": "instrumented build and run ("
                                + ", ".join(f"{row['kernel']}, launch {row['launch']}" for row in result.kernels) + ")",
                                "kernels": [row["kernel"] for row in result.kernels],
                                "seconds": round(time.monotonic() - t0, 3), **timing})
        for k, spec, row, got in zip(chosen, specs, result.kernels, captured):
            _write_report(report, result)  # as it goes: a run killed at a deadline still tells what it measured
            mep_dir = Path(row["mep"])

            def capture_at(launch: int, name: str = k.kernel, spec: str = spec, mep: Path = mep_dir) -> Any:
                """One instrumented build and run recording `launch` of the kernel alone into its MEP; timed as an app run."""
                t0 = time.monotonic()
                with stage("capture"):
                    got = capture(root, spec, build_cmd, run_cmd, launch=launch, output=str(mep), timeout=timeout,
                                  overrides=overrides, max_bytes=max_bytes)
                result.app_runs.append({"purpose": "capture", "what": f"instrumented build and run ({name}, launch {launch})",
                                        "kernels": [name], "seconds": round(time.monotonic() - t0, 3)})
                return got
            if isinstance(got, UserError):
                row["status"] = f"capture failed: {got.one_line()}"
                continue
            row["notes"] = got.notes
            row["replays_capture"] = bool(got.manifest.capture)  # False: sizes and scalars only (over --max-bytes)
            log(f"optimizing {k.kernel} on its captured data" if got.manifest.capture else
                f"optimizing {k.kernel} on generated data at its captured sizes (its data are over --max-bytes)")

            def optimize_kernel(mep: Path = mep_dir) -> Any:
                with stage("optimize"):
                    return optimize(mep, _budget_left(options, own_clock, finish.reserve_s()), progress=_progress(log))
            try:
                outcome = None
                tried: list[int] = []
                for again in _rewrite_launches(k, row["launch"]):
                    try:
                        outcome = optimize_kernel()
                        break
                    except UserError as err:
                        if "writes nothing on captured" not in err.message or again is None:
                            raise
                        # the launch found its outputs already holding what it writes (the application ran it on the same
                        # data before: a benchmark's repetitions, an idempotent update, a merge step over sorted data):
                        # its first launch, else its longest, writes them
                        tried.append(row["launch"])
                        log(f"{k.kernel}'s launch {row['launch']} writes nothing new on its captured data; capturing its "
                            f"launch {again}")
                        got = capture_at(again)
                        row["notes"] = got.notes + [f"launch(es) {', '.join(map(str, tried))} wrote nothing new on their "
                                                    f"captured data; launch {again} captured"]
                        row["launch"] = again
                assert outcome is not None
            except UserError as err:
                row["status"] = f"optimize failed: {err.one_line()}"
                continue
            row["evaluations"] = outcome.evaluations
            row["notes"] = list(row.get("notes") or []) + outcome.notes  # why it stopped, where that needs saying
            row["verdicts"] = _verdict_counts(outcome.rows)
            row["refusals"] = dict(sorted(outcome.refusals.items())[:60])
            row["winner"], row["speedup"] = outcome.best_id or "", round(outcome.best_speedup, 4)
            row["winner_origin"] = outcome.best_origin
            if not outcome.best_id or outcome.best_speedup < min_speedup:
                row["status"] = f"not reintegrated: below {min_speedup:.2f}x, within timing noise"
                continue
            try:
                with stage("reintegrate"):
                    p = plan(mep_dir, "best", str(staged))
                    apply_in_place(p, None, None)
            except UserError as err:
                row["status"] = f"reintegration failed: {err.one_line()}"
                continue
            row["status"] = "reintegrated" + (f"; by hand: {'; '.join(p.manual)}" if p.manual else "")
            result.any_win = True
        left = _seconds_left(options, own_clock)
        if finish.loops and left is not None and left < finish.reserve_s():
            result.notes.append(f"the launch-bound loops were not captured: {left:.0f} s of --time-budget left, a loop's "
                                f"capture and replay and the comparison after need about {finish.reserve_s():.0f} s")
            log(result.notes[-1])
        elif with_sequences:
            from s2s.sequence.in_auto import run_sequences

            _write_report(report, result)
            with stage("sequences"):
                result.sequence_results = run_sequences(root, staged, index, prof.launches, loops, prof.total_ms, build_cmd,
                                                        run_cmd, work, min_speedup=min_speedup, timeout=timeout,
                                                        replay=sequence_replay, log=log)
            result.any_win |= any(r["status"].startswith("reintegrated") for r in result.sequence_results)
        shutil.rmtree(staged / ".s2s-backup", ignore_errors=True)
        fit = finish.runs_within(_seconds_left(options, own_clock))
        if fit < runs:
            result.notes.append(f"{fit} timed run(s) of the application before and after, not {runs}: the --time-budget "
                                f"left room for {fit} (about {finish.run_s:.0f} s a run)")
            log(result.notes[-1])
            runs = fit
        diff = _measure_after(root, staged, work, result, prof, build_cmd, run_cmd, check_cmd, runs, output_rtol, timeout,
                              min_speedup, stage, log)
        slowed = _slowed(result)
        if slowed:  # validated on one captured launch, slower in the application: not kept, the rest measured again
            log("not kept, slower in the application: " + "; ".join(f"{what} ({why})" for _row, what, why in slowed))
            for row, _what, why in slowed:
                row["status"] = f"not kept: slower in the application ({why})"
            _restage(root, staged, result, index, loops)
            diff = _measure_after(root, staged, work, result, prof, build_cmd, run_cmd, check_cmd, runs, output_rtol,
                                  timeout, min_speedup, stage, log)
        result.diff = diff.decode("utf-8", "replace")
        atomic_write(diff_path, diff)
        result.stages["total"] = time.monotonic() - t_start
        result.stages["device_wait"] = own_clock.blocked()
        _write_report(report, result)
        return result


def _measure_after(root: Path, staged: Path, work: Path, result: AppAutoResult, prof: Any, build_cmd: str,
                   run_cmd: str, check_cmd: str | None, runs: int, output_rtol: float, timeout: float,
                   min_speedup: float, stage: Any, log: Callable[[str], None]) -> bytes:
    """The staged copy against the tree: its diff, and, when something was reintegrated, the application rebuilt and
    run before and after (its output check) and the reintegrated one's GPU time measured (result.app, result.gpu,
    each row's gpu_ms_after). A failed check keeps nothing: the diff returned is empty."""
    from s2s.capture.appcheck import compare_apps
    from s2s.capture.profile import measure
    from s2s.scan.tree import scan_tree

    shutil.rmtree(staged / ".s2s-backup", ignore_errors=True)
    diff = _tree_diff(root, staged)
    gpu_after = prof
    graphed = [r for r in result.sequence_results if r["status"].startswith("reintegrated")]
    if result.any_win:
        before, after = work / "app-before", work / "app-after"
        _copy_tree(root, before)
        _copy_tree(staged, after)
        log(f"rebuilding the application before and after, then {runs} alternated runs each")
        from s2s.sequence.in_auto import loop_times

        times = work / "graph-loop-times.txt"
        times.unlink(missing_ok=True)
        try:
            with stage("compare"), loop_times(times):
                cmp = compare_apps(before, after, build_cmd, run_cmd, runs=runs, check_cmd=check_cmd, rtol=output_rtol,
                                   timeout=timeout, log=log)
            result.app = cmp.as_dict()
            warmups: list[Any] = cmp.warmups or [None, None]
            for side, build, warm, timed in zip(("before", "after"), cmp.builds, warmups, (cmp.before, cmp.after)):
                result.app_runs.append({"purpose": side, "what": "build", "seconds": round(build.seconds, 3)})
                if warm is not None:
                    result.app_runs.append({"purpose": side, "what": "warm-up run (not timed)",
                                            "seconds": round(warm.seconds, 3)})
                result.app_runs += [{"purpose": side, "what": "run", "seconds": round(r.seconds, 3)} for r in timed]
        except UserError as err:
            result.app = {"error": err.one_line(), "output_unchanged": False}
        if result.app.get("output_unchanged"):
            log("measuring the reintegrated application's GPU time (instrumented build and run)")
            try:
                with stage("profile_after"):
                    gpu_after = measure(staged, work / "profile-after", build_cmd, run_cmd, timeout=timeout,
                                        launches=list(scan_tree(staged).launches))
                result.app_runs += _profile_runs("profile_after", gpu_after)
            except UserError as err:
                if "launch found to time" in err.message and graphed:  # every launch left is in a graphed loop
                    gpu_after = _Untimed()  # type: ignore[assignment]
                else:
                    result.notes.append(f"the reintegrated application's GPU time was not measured: {err.one_line()}")
                    gpu_after = None  # type: ignore[assignment]
        else:  # nothing is kept: no diff, and every reintegrated kernel says why
            diff = b""
            result.any_win = False
            why = result.app.get("error") or result.app.get("how") or "the output check failed"
            for row in result.kernels + result.sequence_results:
                if row["status"].startswith("reintegrated"):
                    row["status"] = f"not kept: the reintegrated application's output changed ({why})"
    else:
        result.app = {"remeasured": False,
                      "why": f"not re-measured: nothing was reintegrated (no winner at or above {min_speedup:.2f}x on the "
                             "captured data, or none verified), so the application is unchanged and its wall time would "
                             "be the same before and after"}
    after_by = {k.kernel: k.total_ms for k in gpu_after.kernels} if gpu_after is not None else {}
    in_graphs = {k for r in graphed if r["status"].startswith("reintegrated") for k in r["kernels"]}
    for row in result.kernels:
        if gpu_after is not None:  # a kernel launched from a graphed loop is not timed there after (gpu.graphed_loops)
            row["gpu_ms_after"] = None if row["kernel"] in in_graphs else round(after_by.get(row["kernel"], 0.0), 6)
    result.gpu = {"ms_before": round(prof.total_ms, 6),
                  "ms_after": round(gpu_after.total_ms, 6) if gpu_after is not None else None,
                  "how": "sum of the measured kernel times of an instrumented run"
                         + (" before and after reintegration" if gpu_after is not prof else " (nothing changed: the same run)")}
    graphed = [r for r in graphed if r["status"].startswith("reintegrated")]  # "not kept" when the check failed
    if graphed and gpu_after is not None and gpu_after is not prof:
        direct = work / "graph-loop-times-direct.txt"
        _time_loops_direct(work / "app-after", run_cmd, direct, timeout, result)
        _count_graphed_loops(result, graphed, gpu_after.total_ms, work / "graph-loop-times.txt", direct)
    return diff


def _rewrite_launches(k: Any, first: int) -> list[int | None]:
    """The launches to capture again, in order, when the one captured writes nothing new: the first launch, then the
    longest (more work, more likely to change its outputs), each once and not `first`; None ends the list."""
    longest = max(k.times, key=lambda t: (t[1], -t[0]))[0] if k.times else 1
    out: list[int | None] = []
    for n in (1, longest):
        if n != first and n not in out:
            out.append(n)
    return [*out, None]


SLOWER = 1.10  # a kept change's time in the application after over before, beyond which it is taken back
MIN_LAUNCHES = 3  # a kernel launched fewer times is not judged by its instrumented time


def _slowed(result: AppAutoResult) -> list[tuple[dict[str, Any], str, str]]:
    """The reintegrated kernels and graphed loops the application ran slower after than before: a kernel launched at
    least MIN_LAUNCHES times by its instrumented time (every launch of it, not the one captured: a launch shape that
    won there may lose on the application's other sizes), a loop by its time around each run (gaps included), both
    beyond SLOWER."""
    out: list[tuple[dict[str, Any], str, str]] = []
    for row in result.kernels:
        after = row.get("gpu_ms_after")
        if row.get("launches", 0) < MIN_LAUNCHES:  # one launch's time holds one-time costs (an OpenCL driver's JIT)
            continue
        if row["status"].startswith("reintegrated") and after is not None and after > SLOWER * row["gpu_ms"] + 0.01:
            out.append((row, row["kernel"], f"{row['gpu_ms']:.3f} ms before, {after:.3f} ms after"))
    from statistics import median

    loops = {q["loop"]: q for q in (result.gpu or {}).get("graphed_loops", [])}
    wall_before, wall_after = (result.app or {}).get("wall_before_s") or [], (result.app or {}).get("wall_after_s") or []
    # a graph changes host code: every run after slower than every run before, by SLOWER, is its host cost showing
    wall = (f"the application's wall time {median(wall_before):.2f} s before, {median(wall_after):.2f} s after"
            if wall_before and wall_after and min(wall_after) > SLOWER * max(wall_before) else "")
    for row in result.sequence_results:
        q = loops.get(row["loop"])
        if not row["status"].startswith("reintegrated") or q is None or not q["loop_ms_after"]:
            continue
        before = median(q["loop_ms_before"]) if q.get("loop_ms_before") else float(q["kernel_ms_before"])
        after = median(q["loop_ms_after"])
        if after > SLOWER * before + 0.01:
            out.append((row, row["loop"], f"{before:.3f} ms before, {after:.3f} ms after"))
        elif wall:
            out.append((row, row["loop"], wall))
    return out


def _restage(root: Path, staged: Path, result: AppAutoResult, index: Any, loops: list[Any]) -> None:
    """The staged copy made again from the tree with only what is still reintegrated: each kernel's winner, then each
    graphed loop in the form it won with; one that no longer applies says why and is left out."""
    from s2s.sequence.in_auto import regraph

    shutil.rmtree(staged, ignore_errors=True)
    _copy_tree(root, staged)
    for row in result.kernels:
        if row["status"].startswith("reintegrated"):
            try:
                apply_in_place(plan(Path(row["mep"]), "best", str(staged)), None, None)
            except UserError as err:
                row["status"] = f"not kept: its reintegration failed the second time ({err.one_line()})"
    for row in result.sequence_results:
        if row["status"].startswith("reintegrated"):
            why = regraph(staged, index, loops, row)
            if why:
                row["status"] = f"not kept: {why}"
    shutil.rmtree(staged / ".s2s-backup", ignore_errors=True)
    result.any_win = any(r["status"].startswith("reintegrated") for r in result.kernels + result.sequence_results)


class _Untimed:
    """The instrumented after-run of a copy whose every launch went into graphed loops: nothing left to time."""
    total_ms = 0.0
    kernels: list[Any] = []


def _time_loops_direct(after: Path, run_cmd: str, times: Path, timeout: float, result: AppAutoResult) -> None:
    """One more run of the reintegrated application with its graphed loops launching as the original did
    (S2S_GRAPH_DIRECT): each loop's time before, measured as its time after is (events around each run of the loop,
    gaps included)."""
    from s2s.capture.appcheck import run_app
    from s2s.sequence.in_auto import DIRECT_ENV, TIMES_ENV

    times.unlink(missing_ok=True)
    env = {**os.environ, TIMES_ENV: str(times), DIRECT_ENV: "1"}
    try:
        done = run_app(run_cmd, after, timeout, env=env)
        result.app_runs.append({"purpose": "loops_direct", "what": "run", "seconds": round(done.seconds, 3)})
    except UserError as err:
        result.notes.append(f"the graphed loops' time as the original launches them was not measured: {err.one_line()}")


def _count_graphed_loops(result: AppAutoResult, graphed: list[dict[str, Any]], rest_ms: float, times: Path,
                         direct: Path | None = None) -> None:
    """A graphed loop's launches are no launch statements any more: the instrumented after-run does not time them. Its
    time after is the one measured around each run of the loop in the application's runs after (events, gaps
    included, summed per application run); before, the same measurement with the loop launching as the original did
    (`direct`, S2S_GRAPH_DIRECT), else its kernels' per-launch times (gaps excluded: a comparison that can only
    understate the gain)."""
    from statistics import median

    from s2s.sequence.in_auto import read_loop_times

    by_label = read_loop_times(times)
    as_original = read_loop_times(direct) if direct is not None else {}
    loops = [{"loop": r["loop"], "kernel_ms_before": r["gpu_ms"], "loop_ms_before": as_original.get(r.get("label", ""), []),
              "loop_ms_after": by_label.get(r.get("label", ""), [])} for r in graphed]
    result.gpu["graphed_loops"] = loops
    if all(q["loop_ms_after"] for q in loops):
        result.gpu["ms_after"] = round(rest_ms + sum(median(q["loop_ms_after"]) for q in loops), 6)
        if all(q["loop_ms_before"] for q in loops):
            kernels_in_loops = sum(float(q["kernel_ms_before"]) for q in loops)
            result.gpu["ms_before"] = round(float(result.gpu["ms_before"]) - kernels_in_loops
                                            + sum(median(q["loop_ms_before"]) for q in loops), 6)
            result.gpu["how"] += ("; a graphed loop: the median of its time measured around each run of the loop "
                                  "(gaps included), after in the application's runs after, before in a run of the same "
                                  "build with the loop launching as the original (S2S_GRAPH_DIRECT)")
        else:
            result.gpu["how"] += ("; a graphed loop after: the median of its time measured around the whole loop in the "
                                  "application's runs after (gaps included; before, gaps excluded)")
    else:
        result.gpu["ms_after"] = None
        result.notes.append("a graphed loop's time after was not measured (no line from its runtime): ms_after left out")


def _write_report(path: Path, result: AppAutoResult) -> None:
    atomic_write(path, (json.dumps(result.as_dict(), indent=1, default=str) + "\n").encode())


def _verdict_counts(rows: list[Any]) -> dict[str, int]:
    """How many candidates ended in each verdict (ok, wrong-output, compile-failed, ...), the original left out."""
    out: dict[str, int] = {}
    for r in rows:
        if getattr(r, "origin", "") == "original":
            continue
        v = str(getattr(r, "status", "") or "unknown")
        out[v] = out.get(v, 0) + 1
    return out
