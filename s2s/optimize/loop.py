"""Stage 4: optimize in rounds. Propose, build in parallel on the CPU cores, repair what does not build,
evaluate one at a time on the device, keep the best verified variant, feed the results to the next round.

Every evaluation is committed to the MEP's history before the next starts; a killed run resumes where
it stopped (finished candidates are looked up by fingerprint and never evaluated twice).
"""
from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s2s.base.devicelock import lock_path
from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write
from s2s.base.meplock import exclusive
from s2s.capture.verify import capture_key
from s2s.lang.kernel_facts import kernel_facts
from s2s.mep import profile_ncu
from s2s.mep.captured_only import check_captured_only, faulted_on_generated
from s2s.mep.history import History
from s2s.mep.manifest import Manifest, load, save
from s2s.mep.same_values import check_as_inout, check_as_outputs
from s2s.mep.variant import Variant

from . import cost
from .candidate import Candidate
from .execution import ClusterOptions, Executor, open_executor
from .patterns import Library, features
from .progress import Clock
from .proposers import PROPOSERS, State
from .resume import pending_candidates, with_pending
from .target import target_of
from .winner import declare as declare_winner
from .winner import noise_band

Progress = Callable[[dict[str, Any]], None]
# rounds in a row whose candidates were all evaluated before (a resumed run) that the loop skips before it stops: the
# built-in proposer moves down its ranking each round, a proposer that repeats itself stops here
STALE_ROUNDS = 3
_LIBRARY_LOCK = threading.Lock()  # several MEPs optimized at once (auto --cluster) share the library


@dataclass
class Options:
    proposer: str = "builtin"
    rounds: int | None = None  # at most this many rounds; None: until the budget, the time or the candidates run out
    max_evals: int = 30
    time_budget_s: float | None = None
    patterns: str | None = None  # library path; None: the per-user default
    use_patterns: bool = True
    jobs: int = max(1, os.cpu_count() or 1)
    max_repairs: int = 2
    min_gain: float = 1.02
    # rounds in a row without improvement before stopping (from round 2 on); None: never stop on that alone (the
    # built-in proposer moves down its ranking instead, and stops proposing when nothing is left)
    patience: int | None = None
    llm_config: str | None = None
    replay_file: str | None = None
    wait_lock: bool = False  # another optimize holds the MEP: wait for it (else exit 2)
    cluster: ClusterOptions = field(default_factory=ClusterOptions)  # where evaluations run (--cluster)
    executor: Executor | None = None  # an open one shared by several MEPs; None: opened (and closed) here
    # where ncu is on this machine: profile the original and the winner once (s2s.mep.profile_ncu). The CLI turns it on
    # (--no-profile: off); off for library callers such as benchmarks, which profile on their own deadlines
    profile: bool = False


@dataclass
class Outcome:
    best_id: str | None
    best_speedup: float
    best_origin: str
    evaluations: int
    evals_to_best: int
    rounds: int
    stopped: str
    rows: list[Any] = field(default_factory=list)
    refusals: dict[str, str] = field(default_factory=dict)  # pipeline -> why the proposer did not make it
    notes: list[str] = field(default_factory=list)  # why it stopped where that needs saying (the time budget)


def write_variant(mep_dir: Path, kernel_file: str, cand: Candidate) -> None:
    vdir = mep_dir / "variants" / cand.id
    vdir.mkdir(parents=True, exist_ok=True)
    atomic_write(vdir / kernel_file, cand.source)
    launch = cand.launch
    Variant(origin=cand.origin, note=cand.note, parent=cand.parent, grid=launch.grid if launch else None,
            block=launch.block if launch else None, shared_mem=launch.shared_mem if launch else None,
            launch_rules=cand.launch_rules if launch else (), local_counts=launch.local_counts if launch else ()).write(vdir)


def _scratch_evaluate(evaluate: Callable[..., Any]) -> Callable[..., Any]:
    """`evaluate` run in a copy of the MEP (its kernel, variants and captured data; no history, no build folder), so a
    coordinator that hands evaluations to a cluster never builds in the MEP itself. Re-timing still runs on the
    coordinator's device: on a login node without one, no winner is declared (the candidates stay in the history)."""
    import shutil
    import tempfile

    def run(mep_dir: Path, variant: str | None) -> Any:
        with tempfile.TemporaryDirectory(prefix="s2s-retime-") as tmp:
            copy = Path(tmp) / "mep"
            shutil.copytree(mep_dir, copy, symlinks=True,
                            ignore=shutil.ignore_patterns("build", "history.sqlite*", ".s2s.lock", ".s2s-backup"))
            return evaluate(copy, variant)

    return run


def _pipeline(origin: str) -> str:
    head = origin.split("+repair")[0]
    return head[len("pass:"):] if head.startswith("pass:") else ""


def _read_kernel(mep_dir: Path, kernel_file: str) -> bytes:
    try:
        return (mep_dir / kernel_file).read_bytes()
    except OSError as exc:
        raise UserError(f"kernel_file = {kernel_file!r}: cannot read {mep_dir / kernel_file} ({exc.strerror})",
                        file=str(mep_dir / "mep.toml"), hint="extract the MEP again, or restore the file") from None


def _first_check(mep_dir: Path) -> list[str]:
    """The original checked on its captured data before anything is optimized; a UserError (exit 2) when the MEP is
    not sound. Three refusals have a remedy, each tried once, said in mep.toml and returned as notes: a reference that
    faults on generated input sets only is checked on the captured sets alone (mep.captured_only); an output the
    kernel reads is replayed as in-out (mep.same_values.check_as_inout); in-out buffers the launch left holding their
    old values are checked as outputs (mep.same_values), put back when the kernel reads them."""
    from s2s.mep import evaluate as ev

    notes: list[str] = []
    generated_dropped = False
    made_inout: set[str] = set()  # outputs found reading their prior contents, now replayed as in-out
    flipped: tuple[Manifest, str, UserError] | None = None  # the manifest before, the note, the refusal it answers
    while True:
        try:
            meas = ev.evaluate(mep_dir, None, time=False)
            # a runner killed on a generated set (a segmentation fault on a CPU device) reports no input error
            crash = None if meas.ok or generated_dropped else next((t for t in meas.messages if faulted_on_generated(t)), None)
            if crash is None:
                return notes + ([flipped[1]] if flipped else [])
            raise UserError(crash)
        except UserError as err:
            note = None if generated_dropped else check_captured_only(mep_dir, err.message)
            if note is not None:
                generated_dropped = True
                notes.append(note)
                continue
            if flipped is not None:  # the kernel reads those buffers: the launch truly writes nothing new
                save(flipped[0], mep_dir)
                raise flipped[2] from None
            read = check_as_inout(mep_dir, err.message)
            if read is not None and read[0] not in made_inout:
                made_inout.add(read[0])
                notes.append(read[1])
                continue
            got = check_as_outputs(mep_dir, err.message)
            if got is None:
                raise
            flipped = (got[0], got[1], err)


@exclusive  # one optimize per MEP at a time (its lock file)
def optimize(mep: str | Path, opts: Options, progress: Progress | None = None) -> Outcome:
    from s2s.mep import evaluate as ev

    mep_dir = Path(mep)
    manifest = load(mep_dir)
    missing = manifest.unfilled()
    if missing:
        raise UserError(f"mep.toml has values to fill in: {'; '.join(missing)}", file=str(mep_dir / "mep.toml"))
    ev.load_checked(mep_dir)  # its backend known, the manifest sound for it, the capture index contained: before any candidate
    first_notes: list[str] = []
    if manifest.capture:  # the reference must reproduce the real run's outputs before anything is optimized
        first_notes = _first_check(mep_dir)
        manifest = load(mep_dir)
    captured = capture_key(manifest, mep_dir) if manifest.capture else None
    if opts.proposer not in PROPOSERS:
        raise UserError(f"unknown proposer '{opts.proposer}'", hint=f"one of {', '.join(PROPOSERS)}")
    proposer = PROPOSERS[opts.proposer](llm_config=opts.llm_config, replay_file=opts.replay_file)
    original = _read_kernel(mep_dir, manifest.kernel_file)
    kernel = manifest.kernel.split("::")[-1]
    dialect = manifest.dialect
    facts = kernel_facts(original, dialect, kernel)
    feats = features(facts) if facts is not None else ()
    library = Library(Path(opts.patterns) if opts.patterns else None) if opts.use_patterns else None  # --no-patterns: never read
    history = History(mep_dir / "history.sqlite")
    state = State(manifest=manifest, original=original, kernel=kernel, dialect=dialect, facts=facts,
                  patterns=library.suggest(feats, manifest.backend) if library is not None else [])
    state.target = target_of(history)  # the device the MEP measured on; the H200 when nothing is known yet
    done = history.finished_shas()
    for row in done.values():
        if row.status == "ok" and row.speedup and not row.failed_on_capture:
            src = (mep_dir / "variants" / row.id / manifest.kernel_file)
            if src.is_file():
                state.ok_candidates.append((row.speedup, Candidate(src.read_bytes(), row.origin), _pipeline(row.origin)))
    evals = sum(1 for r in done.values() if r.status not in {"duplicate"})
    best = history.best()
    best_speedup = best.speedup if best and best.speedup else 1.0
    evals_to_best = 0
    clock = Clock(start=time.monotonic(), budget_s=opts.time_budget_s)
    clock.notes += first_notes
    executor = opts.executor or open_executor(opts.cluster)  # the CLI and auto pass one open executor for all MEPs
    session = executor.session(mep_dir, jobs=opts.jobs)
    remote = executor.name != "local"
    # each re-timing holds the device as the harness does it: checks beside other evaluations, the timing alone; the
    # original against itself is only timed (a check would hold it to itself)
    timed = functools.partial(ev.evaluate, harness_lock=lock_path())
    timed_only = functools.partial(ev.evaluate, harness_lock=lock_path(), check=False)
    if opts.profile and executor.name == "local":  # the LLM prompt shows it; a cluster's coordinator may have no GPU
        state.feedback["original"] = profile_ncu.feedback(mep_dir, history, None)
    stopped = "rounds"
    round_no = 0
    idle_rounds = stale_rounds = 0
    while opts.rounds is None or round_no < opts.rounds:
        round_no += 1
        state.round = round_no
        state.rows = history.rows()
        state.budget = opts.max_evals - evals
        state.best_speedup = best_speedup
        if state.budget <= 0:
            stopped = "max-evals"
            break
        why = clock.over(time.monotonic())
        if why is not None:
            stopped = "time-budget"
            clock.notes.append(why)
            break
        cands = proposer.propose(state)
        fresh: list[Candidate] = []
        seen: set[str] = set()
        for c in cands:
            key = c.source_sha + json.dumps(c.launch.as_dict() if c.launch else None, sort_keys=True)
            if key in done or c.id in seen:
                continue
            seen.add(c.id)
            fresh.append(c)
        if round_no == 1:  # candidates a killed run registered but never evaluated
            fresh = with_pending(pending_candidates(history, mep_dir, manifest.kernel_file), fresh)
        fresh = fresh[: state.budget]
        if not fresh and cands and stale_rounds < STALE_ROUNDS:  # all evaluated before (a resumed run): propose again
            stale_rounds += 1
            continue
        if not fresh:
            stopped = "no-new-candidates"
            break
        stale_rounds = 0
        for c in fresh:
            write_variant(mep_dir, manifest.kernel_file, c)
            history.add(c.id, round_no, c.origin, c.parent, c.source_sha, c.launch.as_dict() if c.launch else None)
        cost.record(history, state, fresh)  # the model's prediction beside each measurement, for the report
        by_id = {c.id: c for c in fresh}
        repaired = dict.fromkeys(by_id, 0)
        session.submit([c.id for c in fresh])
        if round_no == 1 and not remote:
            # the noise band while the first candidates build: measured at the end, it queued every MEP's timings
            # of the original behind the same deadline (parallel MEPs on one device end together)
            noise_band(mep_dir, history, timed_only)
        if clock.first_at is None:  # the pace of evaluations is counted from here (the noise band is no candidate)
            clock.started_first(time.monotonic())
        improved = False
        while True:
            why = clock.over(time.monotonic())
            if why is not None:  # a long kernel's next evaluation would end past the budget: none is started
                stopped = "time-budget"
                clock.notes.append(why)
                break
            rec = session.next()
            if rec is None:
                break
            cand = by_id[rec.variant]
            repairs = repaired[cand.id]
            if rec.input_error is not None:
                raise ev._input_error(mep_dir, rec.input_error)
            if not rec.build_ok and repairs < opts.max_repairs:
                fixed = proposer.repair(cand, rec.build_log, state)
                if fixed is not None:
                    history.finish(cand.id, "compile-failed", {"messages": list(rec.messages)}, rec.build_log, repairs)
                    write_variant(mep_dir, manifest.kernel_file, fixed)
                    history.add(fixed.id, round_no, fixed.origin, fixed.parent, fixed.source_sha,
                                fixed.launch.as_dict() if fixed.launch else None)
                    cost.record(history, state, [fixed])
                    by_id[fixed.id], repaired[fixed.id] = fixed, repairs + 1
                    session.submit([fixed.id], first=True)
                    continue
            m = rec.measurement()
            evals += 1
            clock.done += 1
            result = rec.result
            history.finish(cand.id, m.verdict, result, rec.build_log, repairs)
            if captured is not None and m.verdict == "ok":  # it was checked on the captured data first
                history.mark_captured(cand.id, "ok", captured, {"from": manifest.capture.get("from", ""), "message": "",
                                                                "during": "optimize"})
            done[cand.source_sha + json.dumps(cand.launch.as_dict() if cand.launch else None, sort_keys=True)] = history.get(cand.id)  # type: ignore[assignment]
            if m.device:
                if m.device != state.device:
                    state.target = target_of(history, m.device)
                state.device = m.device
            speedup = m.speedup or 0.0
            if m.verdict == "ok" and speedup > 0:
                state.ok_candidates.append((speedup, cand, _pipeline(cand.origin)))
                if speedup > best_speedup * opts.min_gain:
                    improved = True
                if speedup > best_speedup:
                    best_speedup = speedup
                    best = history.get(cand.id)
                    state.best = cand
                    evals_to_best = evals
            if progress is not None:
                now = time.monotonic()
                progress({"kind": "candidate", "kernel": manifest.kernel, "round": round_no, "candidate": cand.id,
                          "origin": cand.origin, "verdict": m.verdict, "speedup": speedup, "best": best_speedup,
                          "evals": evals, "max_evals": opts.max_evals, "elapsed_s": round(now - clock.start, 1),
                          "left_s": clock.left(now, opts.max_evals - evals)})
            if evals >= opts.max_evals:
                stopped = "max-evals"
                break
        if stopped in {"time-budget", "max-evals"}:
            break
        idle_rounds = 0 if improved else idle_rounds + 1
        if round_no >= 2 and opts.patience is not None and idle_rounds >= opts.patience:
            stopped = "no-improvement"
            break
    session.close()
    if executor is not opts.executor:
        executor.close()
    if progress is not None:
        progress({"kind": "stop", "kernel": manifest.kernel, "stopped": stopped, "note": "; ".join(clock.notes),
                  "evals": evals, "elapsed_s": round(time.monotonic() - clock.start, 1)})
    # the top 3 re-timed, above the noise band (winner.py); with a cluster, in a scratch copy (the MEP stays unbuilt)
    best, _ = declare_winner(mep_dir, history, _scratch_evaluate(timed) if remote else timed,
                             noise=_scratch_evaluate(timed_only) if remote else timed_only)
    if best is None:
        (mep_dir / "variants" / "BEST").unlink(missing_ok=True)
    if best is not None:
        history.set_meta("best", best.id)
        atomic_write(mep_dir / "variants" / "BEST", (best.id + "\n").encode())
        if opts.profile and not remote:
            profile_ncu.feedback(mep_dir, history, best.id)
        pipeline = _pipeline(best.origin)
        if pipeline and best.speedup and library is not None:
            with _LIBRARY_LOCK:  # read again: another MEP's run may have added to it since
                try:
                    Library(library.path).record(feats, pipeline, best.speedup, state.device, manifest.kernel, manifest.backend)
                except UserError:  # damaged since the start: left as it is, the winner is in the history anyway
                    pass
    rows = history.rows()
    history.close()
    return Outcome(best_id=best.id if best else None, best_speedup=best.speedup if best and best.speedup else 1.0,
                   best_origin=best.origin if best else "", evaluations=evals, evals_to_best=evals_to_best,
                   rounds=round_no, stopped=stopped, rows=rows, refusals=dict(getattr(proposer, "refusals", {})),
                   notes=clock.notes)
