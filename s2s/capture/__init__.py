"""`s2s capture`: record a kernel's real inputs and outputs from a run of the application.

    capture(tree, kernel, build_cmd, run_cmd, ...) -> Captured
    capture_kernels(tree, [KernelCapture(kernel, launch=N, output=DIR), ...], build_cmd, run_cmd, ...) -> CaptureRun

Extracts the kernel into an MEP (as `s2s extract`), copies the tree to a temporary directory,
instruments the copy at the kernel's launch sites (instrument.py), builds and runs the copy with the
user's commands, and writes the recorded data into the MEP (collect.py). The original tree is only read.
With `into`, the data go into an existing MEP of the same kernel instead, its history kept (attach.py).
`capture_kernels` does this for several kernels with one instrumented copy, one build and one run: each kernel
records its own launch into its own dump, and one kernel's failed extraction or collection is its own result.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from s2s.base.errors import UserError
from s2s.base.fsutil import move_into
from s2s.base.treefiles import copy_tree, owner_writable
from s2s.mep.manifest import Manifest, load, save

DEFAULT_MAX_BYTES = 2 << 30


@dataclass
class Captured:
    mep: Path
    manifest: Manifest
    sites: list[str]
    files: list[str]
    notes: list[str] = field(default_factory=list)
    launches_seen: int | None = None
    fidelity: dict[str, Any] | None = None  # --compare-static: capture/fidelity.json


@dataclass
class KernelCapture:
    """One kernel's part of a capture run: the kernel (NAME or FILE:NAME), the launch it records (`launch` N, or the
    `first` N), and where its MEP goes (`output`, or an existing MEP `into`)."""
    kernel: str
    launch: int | None = None
    first: int | None = None
    output: str | None = None
    into: str | None = None

    def want(self) -> str:
        return f"--first {self.first}" if self.first else f"--launch {self.launch or 1}"


@dataclass
class CaptureRun:
    """What one instrumented build and run captured: per kernel asked for (in order), its Captured or the UserError
    that stopped it; the build's and the run's wall time (0.0 where they did not happen)."""
    results: list[Captured | UserError]
    build_s: float = 0.0
    run_s: float = 0.0
    stopped: str = ""  # the run killed at its timeout: why (the kernels recorded before the kill are still captured)


def parse_bytes(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT]?)(i?[bB])?\s*", str(text))
    if not m:
        raise UserError(f"--max-bytes {text!r}: a number of bytes, optionally with K, M, G or T")
    return int(m.group(1)) * 1024 ** " KMGT".index((m.group(2) or " ").upper())


def _tail(text: str, n: int = 1) -> str:
    """The first line that reports an error, else the last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"\b(error|fatal)\b|undefined reference", ln, re.I)
              and "Waiting for unfinished jobs" not in ln
              and not re.match(r"make(\[\d+\])?: \*\*\*", ln)]
    if errors:
        return " | ".join(errors[:n])
    return " | ".join(lines[-n:]) if lines else "no output"


class _TimedOut(UserError):
    """The user's command killed at the capture's timeout."""


def _run(cmd: str, cwd: Path, env: dict[str, str], timeout: float, log: Path, what: str) -> float:
    """The user's command in its own process group (all of it killed on timeout or interrupt); its output streamed
    into a bounded buffer (the first and last MB) and appended to `log`."""
    from s2s.base.procs import run_group

    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ {cmd}   (in the instrumented copy)\n")
    proc = run_group(cmd, cwd=cwd, env=env, timeout_s=timeout, log=log)
    if proc.timed_out:
        raise _TimedOut(f"capture: the {what} command {cmd!r} was killed after {timeout:g} s (with every process it started)")
    if proc.returncode != 0:
        raise UserError(f"capture: the {what} command {cmd!r} failed with exit code {proc.returncode} in the instrumented "
                        f"copy: {_tail(proc.output)}", file=str(log), hint=f"its output is in {log}")
    return proc.seconds


_HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inc", ".inl", ".def")


def generated_headers(root: Path, built: Path, own: Path | None = None, limit: int = 200) -> list[str]:
    """Headers (relative paths) that the build command wrote into the copy `built` and the tree `root` lacks,
    s2s's own capture runtime header `own` left out."""
    out: list[str] = []
    for d, dirs, files in os.walk(built):
        dirs[:] = [x for x in dirs if x not in {".git", "dump"}]
        for f in files:
            path = Path(d) / f
            if not f.endswith(_HEADER_SUFFIXES) or (own is not None and path == own) or path.is_symlink():
                continue
            rel = path.relative_to(built).as_posix()
            if not (root / rel).exists():
                out.append(rel)
                if len(out) >= limit:
                    return sorted(out)
    return sorted(out)


def capture(tree: str | Path, kernel: str, build_cmd: str, run_cmd: str, *, launch: int | None = None,
            first: int | None = None, output: str | None = None, into: str | None = None, **options: Any) -> Captured:
    """`s2s capture` of one kernel: `capture_kernels` with that kernel alone; its error is raised."""
    job = KernelCapture(kernel, launch=launch, first=first, output=output, into=into)
    (got,) = capture_kernels(tree, [job], build_cmd, run_cmd, **options).results
    if isinstance(got, UserError):
        raise got
    return got


def capture_kernels(tree: str | Path, jobs: list[KernelCapture], build_cmd: str, run_cmd: str, **options: Any) -> CaptureRun:
    """Capture every kernel of `jobs` from one instrumented build and run (options as `_capture_kernels` takes them).
    A file that cannot be written or read on the way (a full disk, a read-only place) is one line naming it, never a
    traceback; the build or the run failing is raised for all, a kernel's own failure is its result."""
    for job in jobs:
        if job.launch is not None and job.first is not None:
            raise UserError("--launch and --first exclude each other")
        for name, v in (("--launch", job.launch), ("--first", job.first)):
            if v is not None and v < 1:
                raise UserError(f"{name} {v}: launches are counted from 1")
        if job.into is not None and job.output is not None:
            raise UserError("-o and --into exclude each other")
    if not jobs:
        return CaptureRun([])
    try:
        return _capture_kernels(tree, jobs, build_cmd, run_cmd, **options)
    except OSError as exc:
        what = f"{exc.filename}: " if exc.filename else ""
        place = jobs[0].output or jobs[0].into if len(jobs) == 1 else None
        raise UserError(f"capture stopped: {what}{exc.strerror or exc}", file=str(place or tree),
                        hint="free space or make the place writable, then capture again") from None


@dataclass
class _Kernel:
    """A kernel of a capture run on its way: its MEP staged in the temporary directory, then its result."""
    job: KernelCapture
    staged: Path
    manifest: Any = None
    extraction: Any = None
    held: Manifest | None = None  # the MEP that receives the data (--into)
    result: Captured | UserError | None = None
    notes: list[str] = field(default_factory=list)


def _capture_kernels(tree: str | Path, jobs: list[KernelCapture], build_cmd: str, run_cmd: str, *,
                     max_bytes: int = DEFAULT_MAX_BYTES, timeout: float = 1800.0, compile_commands: str | None = None,
                     mode: str = "auto", overrides: dict[str, str] | None = None, keep_copy: str | None = None,
                     compare_static: bool = False, total_s: float | None = None) -> CaptureRun:
    """`timeout`: seconds for the build and for the run each; `total_s`: for both together (the run's timeout is
    what the build left of it, so that a caller's own deadline finds the run killed, and its recorded kernels kept)."""
    import time

    t_start = time.monotonic()
    from s2s.extract.mep_writer import make_mep
    from s2s.scan.sources import check_tree

    from .attach import check_same_kernel
    from .hipcc import hipcc_on_path, uses_hip
    from .instrument import instrument_kernels

    root = check_tree(str(tree))
    if not root.is_dir():
        raise UserError("capture needs the application's directory (it is built and run)", file=str(tree))
    run = CaptureRun([])
    with tempfile.TemporaryDirectory(prefix="s2s-capture-") as tmp, ExitStack() as cleanup:
        # each MEP is written next to the data first and copied to its place only when its capture worked;
        # with --into, only its launch sites and its check against the existing MEP are used
        kernels = [_Kernel(job, Path(tmp) / f"mep-{i}") for i, job in enumerate(jobs)]
        from s2s.scan.tree import scan_tree

        from .indirect import indirect_sites

        index = scan_tree(root)  # once, for every kernel's extraction and the launches through function pointers
        for k in kernels:
            try:
                k.held = load(Path(k.job.into)) if k.job.into is not None else None
                _, k.manifest, k.extraction = make_mep(str(root), k.job.kernel, str(k.staged), compile_commands=compile_commands,
                                                       mode=mode, overrides=overrides or {}, build_cmd=build_cmd, index=index)
                if k.job.into is not None and k.held is not None:
                    check_same_kernel(Path(k.job.into), k.held, k.manifest)
            except UserError as err:
                k.result = err
        live = [k for k in kernels if k.result is None]
        if not live:
            run.results = [k.result for k in kernels if k.result is not None]
            return run
        fd, log_name = tempfile.mkstemp(prefix="s2s-capture-", suffix=".log")
        os.close(fd)
        log = Path(log_name)
        work = Path(keep_copy).resolve() if keep_copy else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        ins = instrument_kernels(root, work, [(k.manifest, list(k.extraction.launches)) for k in live],
                                 indirect_sites(index.launches, {kd.name for kd in index.kernels}))
        for slot, k in enumerate(live):
            if slot in ins.errors:
                k.result = ins.errors[slot]
        if all(k.result is not None for k in live):
            log.unlink(missing_ok=True)
            run.results = [k.result for k in kernels if k.result is not None]
            return run
        hip_note = cleanup.enter_context(hipcc_on_path(uses_hip(root, [s for k in live for s in k.extraction.launches],
                                                                (k.manifest.backend for k in live))))
        if hip_note:  # a HIP application's hipcc where ROCm is not installed: ours, until the run is collected
            ins.notes.append(hip_note)
        env = dict(os.environ)
        run.build_s = _run(build_cmd, ins.root, env, timeout, log, "build")
        generated = generated_headers(root, ins.root, ins.header) if any(k.held is None for k in live) else []
        if generated:  # headers the build wrote (NPB's npbparams.hpp): extract again with them, so their macros reach the MEP
            plain = Path(tmp) / "built-sources"
            copy_tree(root, plain, (".git",))
            owner_writable(plain)
            for rel in generated:
                (plain / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ins.root / rel, plain / rel)
            note = (f"extracted after the build command, with the header(s) it generated: {', '.join(generated[:6])}"
                    + (" ..." if len(generated) > 6 else ""))
            for k in live:
                if k.held is not None or k.result is not None:
                    continue
                shutil.rmtree(k.staged, ignore_errors=True)
                try:
                    _, manifest, _ex = make_mep(str(plain), k.job.kernel, str(k.staged), compile_commands=compile_commands,
                                                mode=mode, overrides=overrides or {}, build_cmd=build_cmd)
                except UserError as err:
                    k.result = err
                    continue
                k.manifest = replace(manifest, origin={**manifest.origin, "tree": str(root)})
                k.notes.append(note)
        dump = work / "dump"
        for key in [key for key in env if key.startswith("S2S_CAPTURE_")]:
            env.pop(key)
        env.update({"S2S_CAPTURE_DIR": str(dump), "S2S_CAPTURE_MAX_BYTES": str(int(max_bytes))})
        dumps = {slot: dump if len(live) == 1 else dump / f"kernel{slot}" for slot in range(len(live))}
        shutil.rmtree(dump, ignore_errors=True)  # a kept copy's earlier dump would mix into this run's
        for d in dumps.values():  # the runtime makes its own directory, not the parents
            d.mkdir(parents=True, exist_ok=True)
        for slot, k in enumerate(live):
            env[f"S2S_CAPTURE_DIR_{slot}"] = str(dumps[slot])
            if k.result is not None:  # not instrumented or not extracted again: nothing recorded for it
                env[f"S2S_CAPTURE_LAUNCH_{slot}"] = "0"
            elif k.job.first:
                env[f"S2S_CAPTURE_FIRST_{slot}"] = str(k.job.first)
            else:
                env[f"S2S_CAPTURE_LAUNCH_{slot}"] = str(k.job.launch or 1)
        if "OCL_ICD_VENDORS" not in env and os.path.isdir("/etc/OpenCL/vendors"):
            env["OCL_ICD_VENDORS"] = "/etc/OpenCL/vendors"
        try:
            left = timeout if total_s is None else max(1.0, min(timeout, total_s - (time.monotonic() - t_start)))
            run.run_s = _run(run_cmd, ins.root, env, left, log, "run")
        except _TimedOut as err:  # a launch recorded in full before the kill is captured all the same
            run.run_s, run.stopped = left, str(err)
        for slot, k in enumerate(live):
            if k.result is not None:
                continue
            try:
                k.result = _collect_one(k, dumps[slot], root, log, run_cmd, build_cmd, compare_static)
            except UserError as err:
                k.result = UserError(f"{run.stopped}; {err}", file=err.file, hint=err.hint) if run.stopped else err
            except OSError as exc:
                what = f"{exc.filename}: " if exc.filename else ""
                k.result = UserError(f"capture stopped: {what}{exc.strerror or exc}", file=str(k.job.output or k.job.into or tree),
                                     hint="free space or make the place writable, then capture again")
            if isinstance(k.result, Captured):
                k.result.sites = list(ins.sites_of.get(slot, []))
                k.result.files = list(ins.files)
                k.result.notes = k.notes + ins.notes + ins.notes_of.get(slot, []) + k.result.notes
                if run.stopped:
                    k.result.notes.append(f"{run.stopped}; this kernel's launch was recorded in full before")
        log.unlink(missing_ok=True)
    run.results = [k.result if k.result is not None else UserError(f"capture: {k.job.kernel}: nothing recorded")
                   for k in kernels]
    return run


def _collect_one(k: _Kernel, dump: Path, root: Path, log: Path, run_cmd: str, build_cmd: str,
                 compare_static: bool) -> Captured:
    """One kernel's dump written into its MEP (a new one, or the one it is captured into), with the run's log, holding
    that MEP's lock."""
    from s2s.base.meplock import mep_lock

    job = k.job
    out = Path(job.into) if job.into is not None else Path(job.output or f"mep-{k.extraction.kernel.name}")
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with mep_lock(out, what="s2s capture"):  # never under a running optimize, nor beside another capture into it
            return _write_one(k, dump, out, root, log, run_cmd, build_cmd, compare_static)
    except BaseException:
        if made:  # a new -o that got nothing: not left behind holding only the lock file
            shutil.rmtree(out, ignore_errors=True)
        raise


def _write_one(k: _Kernel, dump: Path, out: Path, root: Path, log: Path, run_cmd: str, build_cmd: str,
               compare_static: bool) -> Captured:
    from s2s.mep.backends import write_mep_files

    from .attach import attach
    from .collect import collect

    want = k.job.want()
    if k.held is not None:
        got = attach(dump, out, k.held, want=want, run_cmd=run_cmd, build_cmd=build_cmd)
        if not got.manifest.unfilled():  # with FILL-IN values left (a template argument not deduced), as extract:
            write_mep_files(out, got.manifest, readme=False)  # `s2s run` writes the harness once they are filled
        shutil.copy2(log, out / "capture.log")
    else:
        got = collect(dump, k.staged, k.manifest, want=want, run_cmd=run_cmd, build_cmd=build_cmd)
        save(got.manifest, k.staged)
        if not got.manifest.unfilled():
            write_mep_files(k.staged, got.manifest, readme=False)
        shutil.copy2(log, k.staged / "capture.log")
        if (out / "capture").is_dir():
            shutil.rmtree(out / "capture")
        move_into(k.staged, out)  # renamed, not copied, where the temporary directory shares out's file system
    report = None
    if compare_static:  # the statically extracted manifest against the captured truth
        from .fidelity import compare, write

        report = compare(k.manifest, got.manifest, root)
        write(out, report)
    return Captured(mep=out, manifest=got.manifest, sites=[], files=[], notes=list(got.notes),
                    launches_seen=got.index.get("launches_seen"), fidelity=report)
