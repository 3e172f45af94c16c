"""`s2s capture`: record a kernel's real inputs and outputs from a run of the application.

    capture(tree, kernel, build_cmd, run_cmd, ...) -> Captured

Extracts the kernel into an MEP (as `s2s extract`), copies the tree to a temporary directory,
instruments the copy at the kernel's launch sites (instrument.py), builds and runs the copy with the
user's commands, and writes the recorded data into the MEP (collect.py). The original tree is only read.
With `into`, the data go into an existing MEP of the same kernel instead, its history kept (attach.py).
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from s2s.base.errors import UserError
from s2s.base.treefiles import copy_tree
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


def _run(cmd: str, cwd: Path, env: dict[str, str], timeout: float, log: Path, what: str) -> None:
    """The user's command in its own process group (all of it killed on timeout or interrupt); its output streamed
    into a bounded buffer (the first and last MB) and appended to `log`."""
    from s2s.base.procs import run_group

    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ {cmd}   (in the instrumented copy)\n")
    proc = run_group(cmd, cwd=cwd, env=env, timeout_s=timeout, log=log)
    if proc.timed_out:
        raise UserError(f"capture: the {what} command {cmd!r} was killed after {timeout:g} s (with every process it started)")
    if proc.returncode != 0:
        raise UserError(f"capture: the {what} command {cmd!r} failed with exit code {proc.returncode} in the instrumented "
                        f"copy: {_tail(proc.output)}", file=str(log), hint=f"its output is in {log}")


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


def capture(tree: str | Path, kernel: str, build_cmd: str, run_cmd: str, **options: Any) -> Captured:
    """`s2s capture` (options as `_capture` takes them); a file that cannot be written or read on the way (a full
    disk, a read-only place) is one line naming it, never a traceback."""
    try:
        return _capture(tree, kernel, build_cmd, run_cmd, **options)
    except OSError as exc:
        what = f"{exc.filename}: " if exc.filename else ""
        raise UserError(f"capture stopped: {what}{exc.strerror or exc}", file=str(options.get("output") or options.get("into")
                                                                                 or tree),
                        hint="free space or make the place writable, then capture again") from None


def _capture(tree: str | Path, kernel: str, build_cmd: str, run_cmd: str, *, launch: int | None = None, first: int | None = None,
            max_bytes: int = DEFAULT_MAX_BYTES, output: str | None = None, timeout: float = 1800.0,
            compile_commands: str | None = None, mode: str = "auto", overrides: dict[str, str] | None = None,
            keep_copy: str | None = None, into: str | None = None, compare_static: bool = False) -> Captured:
    from s2s.extract.mep_writer import make_mep
    from s2s.mep.backends import write_mep_files
    from s2s.scan.sources import check_tree

    from .attach import attach, check_same_kernel
    from .collect import collect
    from .instrument import instrument, owner_writable

    if launch is not None and first is not None:
        raise UserError("--launch and --first exclude each other")
    for name, v in (("--launch", launch), ("--first", first)):
        if v is not None and v < 1:
            raise UserError(f"{name} {v}: launches are counted from 1")
    if into is not None and output is not None:
        raise UserError("-o and --into exclude each other")
    target = Path(into) if into is not None else None
    held = load(target) if target is not None else None  # the MEP that receives the data (--into)
    root = check_tree(str(tree))
    if not root.is_dir():
        raise UserError("capture needs the application's directory (it is built and run)", file=str(tree))
    want = f"--first {first}" if first else f"--launch {launch or 1}"
    with tempfile.TemporaryDirectory(prefix="s2s-capture-") as tmp:
        # the MEP is written next to the data first and copied to its place only when the capture worked;
        # with --into, only its launch sites and its check against the existing MEP are used
        staged, manifest, ex = make_mep(str(root), kernel, str(Path(tmp) / "mep"), compile_commands=compile_commands,
                                        mode=mode, overrides=overrides or {}, build_cmd=build_cmd)
        if target is not None and held is not None:
            check_same_kernel(target, held, manifest)
        fd, log_name = tempfile.mkstemp(prefix="s2s-capture-", suffix=".log")
        os.close(fd)
        log = Path(log_name)
        out = target or Path(output or f"mep-{ex.kernel.name}")
        work = Path(keep_copy).resolve() if keep_copy else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        ins = instrument(root, work, manifest, list(ex.launches))
        env = dict(os.environ)
        _run(build_cmd, ins.root, env, timeout, log, "build")
        made_notes: list[str] = []
        generated = generated_headers(root, ins.root, ins.header) if held is None else []
        if generated:  # headers the build wrote (NPB's npbparams.hpp): extract again with them, so their macros reach the MEP
            plain = Path(tmp) / "built-sources"
            copy_tree(root, plain, (".git",))
            owner_writable(plain)
            for rel in generated:
                (plain / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ins.root / rel, plain / rel)
            shutil.rmtree(staged, ignore_errors=True)
            staged, manifest, _ex = make_mep(str(plain), kernel, str(staged), compile_commands=compile_commands,
                                             mode=mode, overrides=overrides or {}, build_cmd=build_cmd)
            manifest = replace(manifest, origin={**manifest.origin, "tree": str(root)})
            made_notes.append(f"extracted after the build command, with the header(s) it generated: {', '.join(generated[:6])}"
                              + (" ..." if len(generated) > 6 else ""))
        dump = work / "dump"
        env.update({"S2S_CAPTURE_DIR": str(dump), "S2S_CAPTURE_MAX_BYTES": str(int(max_bytes))})
        env.pop("S2S_CAPTURE_LAUNCH", None)
        env.pop("S2S_CAPTURE_FIRST", None)
        if first:
            env["S2S_CAPTURE_FIRST"] = str(first)
        else:
            env["S2S_CAPTURE_LAUNCH"] = str(launch or 1)
        if "OCL_ICD_VENDORS" not in env and os.path.isdir("/etc/OpenCL/vendors"):
            env["OCL_ICD_VENDORS"] = "/etc/OpenCL/vendors"
        _run(run_cmd, ins.root, env, timeout, log, "run")
        if held is not None:
            got = attach(dump, out, held, want=want, run_cmd=run_cmd, build_cmd=build_cmd)
            if not got.manifest.unfilled():  # with FILL-IN values left (a template argument not deduced), as extract:
                write_mep_files(out, got.manifest, readme=False)  # `s2s run` writes the harness once they are filled
            shutil.move(str(log), out / "capture.log")
        else:
            got = collect(dump, staged, manifest, want=want, run_cmd=run_cmd, build_cmd=build_cmd)
            save(got.manifest, staged)
            if not got.manifest.unfilled():
                write_mep_files(staged, got.manifest, readme=False)
            shutil.move(str(log), staged / "capture.log")
            if (out / "capture").is_dir():
                shutil.rmtree(out / "capture")
            shutil.copytree(staged, out, dirs_exist_ok=True)
    log.unlink(missing_ok=True)
    report = None
    if compare_static:  # the statically extracted manifest against the captured truth
        from .fidelity import compare, write

        report = compare(manifest, got.manifest, root)
        write(out, report)
    return Captured(mep=out, manifest=got.manifest, sites=ins.sites, files=ins.files, notes=made_notes + ins.notes + got.notes,
                    launches_seen=got.index.get("launches_seen"), fidelity=report)
