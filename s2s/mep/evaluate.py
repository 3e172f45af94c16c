"""Build, run, check and time one variant of an MEP against its reference.

    evaluate(mep_dir, variant)            -> Measurement   (build + run)
    build(mep_dir, variant)               -> BuildResult   (CPU only; safe to call from many threads)
    build_many(mep_dir, variants, jobs)   -> [BuildResult] (a thread pool over the CPU cores)
    run_built(build_result)               -> Measurement   (one at a time: it owns the GPU while it runs)

A bad variant never raises: it comes back as a Measurement whose verdict says what went wrong. A bad
MEP (a FILL-IN left in mep.toml, a type that does not exist, a launch the device cannot run, a
reference that does not compile) raises UserError naming the mep.toml entry.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from s2s.base.errors import UserError
from s2s.mep import manifest as manifest_mod
from s2s.mep.backends.base import list_variants, resolve_target

from .backends import Backend, BuildResult, get_backend
from .capture_index import check_capture
from .manifest import Manifest
from .measure import Measurement, failed


class UnfilledError(UserError):
    """mep.toml still has FILL-IN values; `entries` names each one."""

    def __init__(self, path: Path, entries: list[str]) -> None:
        super().__init__(f"{len(entries)} value(s) to fill in before running: " + "; ".join(entries), file=str(path),
                         hint="edit mep.toml")
        self.entries = entries


def load_checked(mep_dir: Path) -> tuple[Manifest, Backend]:
    """The manifest, validated for running, and its backend."""
    mep_dir = Path(mep_dir)
    m = manifest_mod.load(mep_dir)
    path = mep_dir / "mep.toml"
    todo = m.unfilled()
    if todo:
        raise UnfilledError(path, todo)
    backend = get_backend(m.backend, path)
    backend.check_manifest(m, path)
    check_capture(m, mep_dir)  # the captured data's index names only files of this MEP
    return m, backend


def build(mep_dir: Path, variant: str | None = None) -> BuildResult:
    m, backend = load_checked(Path(mep_dir))
    return backend.build(resolve_target(Path(mep_dir), m, variant))


def build_many(mep_dir: Path, variants: Iterable[str | None], *, jobs: int | None = None) -> list[BuildResult]:
    """Build several variants at once (compilers run in parallel); results in the order given."""
    mep_dir = Path(mep_dir)
    m, backend = load_checked(mep_dir)
    targets = [resolve_target(mep_dir, m, v) for v in variants]
    backend.write_files(mep_dir, m)  # once, before the threads share it
    with ThreadPoolExecutor(max_workers=max(1, jobs or os.cpu_count() or 1)) as pool:
        return list(pool.map(backend.build, targets))


def run_built(b: BuildResult, *, time: bool = True, sanitize: bool = False, harness_lock: Path | None = None,
              check: bool = True) -> Measurement:
    """Run a build: the check on every input set, then (when it passed and `time`) the timing. With `harness_lock`
    the harness takes the device lock itself (s2s.base.devicelock): its checks beside other evaluations' checks,
    its timing alone. `check=False` times without checking (the original against itself)."""
    if b.input_error:
        raise _input_error(b.mep_dir, b.input_error)
    if not b.ok:
        return failed(b.failure, backend=b.backend, kernel=b.kernel, variant=b.variant, messages=b.messages,
                      build_seconds=b.seconds)
    backend = get_backend(b.backend)
    m = backend.run(b, time=time, sanitize=sanitize, harness_lock=harness_lock, check=check)
    if m.input_error:
        raise _input_error(b.mep_dir, m.input_error)
    note = b.extra.get("note")
    if note:
        m = m.with_messages(f"variant note: {note}")
    if b.cached:
        m = replace(m, build_seconds=0.0).with_messages("build: up to date (cached)")
    return m


def evaluate(mep_dir: Path, variant: str | None = None, *, time: bool = True, sanitize: bool = False,
             harness_lock: Path | None = None, check: bool = True) -> Measurement:
    return run_built(build(Path(mep_dir), variant), time=time, sanitize=sanitize, harness_lock=harness_lock, check=check)


def variants(mep_dir: Path) -> list[str]:
    m = manifest_mod.load(Path(mep_dir))
    return list_variants(Path(mep_dir), m)


def _input_error(mep_dir: Path, message: str) -> UserError:
    path = Path(mep_dir) / "mep.toml"
    line = None
    mt = re.match(r"(params|symbols|structs)\.([\w:]+)", message)
    if mt:
        line = manifest_mod.line_of(path, f'name = "{mt.group(2)}"')
    else:
        mt = re.match(r"(launch)\.(\w+)|(kernel)\b|(kernel_file)\b", message)
        if mt:
            needle = f"{mt.group(2)} =" if mt.group(1) else f"{mt.group(3) or mt.group(4)} ="
            line = manifest_mod.line_of(path, needle)
    return UserError(message, file=str(path), line=line)
