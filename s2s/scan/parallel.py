"""The scan's per-file work, as plain functions over plain records, run in worker processes.

Two rounds: `prepare` reads a file, hashes it and reads its `Preamble`; `scan_file` parses it (when the byte-level
pre-filter says it may hold a kernel or a launch) and returns its `FileResult`. Each is independent of every other
file, so they run in a process pool and are merged in path order afterwards.
"""
from __future__ import annotations

import hashlib
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from s2s.base.records import Kernel, LaunchSite, ParseProblem
from s2s.base.treefiles import read_regular

from .cache import file_stamp
from .launch_macros import LaunchMacro
from .preamble import Preamble, read_preamble
from .sources import is_binary

MAX_LINE = 1 << 20  # a line longer than this (generated or minified code) is reported, and its file not parsed


@dataclass(frozen=True)
class FileResult:
    kernels: tuple[Kernel, ...] = ()
    launches: tuple[LaunchSite, ...] = ()
    problems: tuple[ParseProblem, ...] = ()
    parsed: bool = False  # False: the pre-filter showed it holds no kernel, launch or kernel macro


@dataclass(frozen=True)
class Prepared:
    rel: str
    size: int
    mtime_ns: int
    sha: str  # "" when unreadable
    lines: int
    preamble: Preamble | None  # None when unreadable, or known from the cache (read only if needed)
    why: str  # why it was not read ("" when it was)
    path: str = ""
    stamp: tuple[int, int] = (0, 0)  # cache.file_stamp of the file as read


@dataclass(frozen=True)
class ScanJob:
    rel: str
    path: str
    size: int
    mtime_ns: int
    language: str
    kernel_macros: frozenset[str]
    launch_macros: tuple[LaunchMacro, ...]
    blank_macros: frozenset[str]


def prepare(rel: str, path: str) -> Prepared:
    data, why, st = read_regular(path)
    if data is None or st is None:
        return Prepared(rel, st.st_size if st else 0, st.st_mtime_ns if st else 0, "", 0, None, why, path)
    if is_binary(data):
        return Prepared(rel, st.st_size, st.st_mtime_ns, "", 0, None, "binary file (NUL bytes), not parsed", path)
    pre = read_preamble(data)
    return Prepared(rel, len(data), st.st_mtime_ns, hashlib.sha256(data).hexdigest(), pre.lines, pre, "", path,
                    file_stamp(st))


def scan_file(job: ScanJob) -> FileResult:
    from .inventory import FileFacts, LineTable, unrecognized_kernels
    from .sources import SourceFile

    data, why, st = read_regular(job.path)
    if data is None or st is None:
        return FileResult(problems=(ParseProblem(job.rel, 1, 1, why),))
    if (len(data), st.st_mtime_ns) != (job.size, job.mtime_ns):  # the content hashed is the content parsed
        return FileResult(problems=(ParseProblem(job.rel, 1, 1, "changed while it was scanned; scan again"),))
    if not _may_hold_kernels(data, job):
        return FileResult()
    long_line = _long_line(data)
    if long_line:
        line, length = long_line
        return FileResult(problems=(ParseProblem(
            job.rel, line, 1, f"line {line} is {length:,} bytes long (generated data?); file not parsed"),), parsed=True)
    source = SourceFile(path=Path(job.path), rel=job.rel, data=data)
    facts = FileFacts(source, job.kernel_macros, {m.name: m for m in job.launch_macros}, job.blank_macros,
                      language=job.language)
    problems = list(facts.problems())
    kernels = facts.kernels()
    if facts.dialect != "opencl" and b"__global__" in data:
        problems.extend(unrecognized_kernels(source, kernels, LineTable(data)))
    return FileResult(tuple(kernels), tuple(facts.launches()), tuple(problems), parsed=True)


def _may_hold_kernels(data: bytes, job: ScanJob) -> bool:
    """The byte-level pre-filter: False when no kernel, launch or kernel-defining macro can be in the file."""
    from .preamble import PARSE_MARKERS

    if job.language == "opencl":
        return b"kernel" in data
    if any(m in data for m in PARSE_MARKERS):
        return True
    return any(n.encode() in data for n in job.kernel_macros) or any(m.name.encode() in data for m in job.launch_macros)


def _long_line(data: bytes) -> tuple[int, int] | None:
    """(line, length) of the first line longer than MAX_LINE, found without splitting the file."""
    if len(data) <= MAX_LINE:
        return None
    start, line = 0, 1
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        if end - start > MAX_LINE:
            return line, end - start
        start, line = end + 1, line + 1
    return None


T = TypeVar("T")
R = TypeVar("R")


def _run_chunk(fn: Callable[..., R], items: list[tuple[int, tuple[object, ...]]]) -> list[tuple[int, R]]:
    return [(i, fn(*args)) for i, args in items]


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@contextmanager
def worker_pool(jobs: int) -> Iterator[Executor | None]:
    """A process pool of `jobs` workers (forked where the system can), or None for one."""
    if jobs <= 1:
        yield None
        return
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        yield pool


def run_all(pool: Executor | None, fn: Callable[..., R], calls: Sequence[tuple[object, ...]], weights: Sequence[int],
            progress: Callable[[int], None] | None = None, workers: int = 1) -> list[R]:
    """fn(*call) for every call, in order; in the pool in chunks of about equal weight (bytes), heaviest first."""
    out: list[R | None] = [None] * len(calls)
    total = sum(weights)
    if pool is None or len(calls) < 4 or total < (256 << 10):
        for i, args in enumerate(calls):
            out[i] = fn(*args)
            if progress is not None:
                progress(1)
        return out  # type: ignore[return-value]
    order = sorted(range(len(calls)), key=lambda i: -weights[i])
    per_chunk = max(total // (workers * 8), 1)
    chunks: list[list[tuple[int, tuple[object, ...]]]] = [[]]
    load = 0
    for i in order:
        if load >= per_chunk or len(chunks[-1]) >= 256:
            chunks.append([])
            load = 0
        chunks[-1].append((i, calls[i]))
        load += weights[i]
    futures = [pool.submit(_run_chunk, fn, chunk) for chunk in chunks if chunk]
    for fut in as_completed(futures):
        done = fut.result()
        for i, r in done:
            out[i] = r
        if progress is not None:
            progress(len(done))
    return out  # type: ignore[return-value]
