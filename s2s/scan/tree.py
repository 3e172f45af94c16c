"""Stage 1: find every kernel and launch site in an application tree.

Four steps, each linear in the tree: read and hash every file and read its preamble (`#define`s, `#include`s,
markers), in worker processes; decide per translation unit which macros make kernels and which language each file is
(`macro_scope`); parse, in worker processes, only the files the byte-level pre-filter cannot rule out; merge in path
order. With a cache directory, every per-file answer is kept by content hash, and an unchanged file is never read
twice nor parsed again.
"""
from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path

from s2s.base.errors import UserError
from s2s.base.records import Index, Kernel, LaunchSite, ParseProblem

from .cache import ScanCache, TreeAnswer, file_stamp
from .launch_macros import LaunchMacro
from .macro_scope import Scope, compute_scope
from .parallel import FileResult, Prepared, ScanJob, default_jobs, prepare, run_all, scan_file, worker_pool
from .preamble import Preamble
from .sources import check_tree, included_closure, is_foreign_include, tree_include_dirs, walk_sources

Progress = Callable[[int, int], None]


def scan_tree(root: str | Path, progress: Progress | None = None, *, cache_dir: Path | None = None,
              jobs: int | None = None) -> Index:
    """Every kernel and launch site under `root`. `cache_dir`: keep and reuse per-file results there (None: no cache);
    `jobs`: worker processes (default: the usable cores). `Index.extra` holds the counts: files, parsed, skipped by
    the pre-filter, cached, unreadable, and the jobs used."""
    start = time.perf_counter()
    tree = check_tree(root)
    files = walk_sources(tree)
    if not files:
        raise UserError("no C, C++, CUDA, HIP or OpenCL source files found", file=str(root),
                        hint=f"looked for {', '.join(sorted({'.cu', '.cuh', '.cl', '.cpp', '.c', '.h', '.hip'}))}")
    cache = ScanCache(cache_dir, tree) if cache_dir is not None else None
    if cache is not None:
        cache.load()
    workers = jobs or default_jobs()
    counter = _Counter(progress)
    with worker_pool(workers) as pool:
        prepared = _prepare_all(pool, workers, files, cache, counter)
        included = _add_included(pool, workers, tree, files, prepared, cache, counter)
        readable = [rel for _, rel in files if prepared[rel].sha]
        digest = hashlib.sha256("\n".join(f"{r}\0{prepared[r].sha}" for r in readable).encode()).hexdigest()
        stats = {"parsed": 0, "skipped": 0, "cached": 0}
        if cache is not None and cache.old.answer.digest == digest \
                and all(k == "" or k in cache.old.results for k in cache.old.answer.keys.values()):
            keys, limits = cache.old.answer.keys, cache.old.answer.limits  # the same tree as last time
            results = {r: cache.old.results[keys[r]] if keys.get(r) else _EMPTY for r in readable}
            stats["cached"] = sum(1 for r in readable if keys.get(r))
            stats["skipped"] = len(readable) - stats["cached"]
            counter(len(readable))
        else:
            preambles = _preambles(prepared, readable, cache)
            scope = compute_scope(readable, preambles, included)
            results, keys = _scan_all(pool, workers, files, prepared, preambles, scope, cache, counter, stats)
            limits = tuple(scope.limits)
            if cache is not None:
                cache.new.preambles = {prepared[r].sha: preambles[r] for r in readable}
    counter(counter.total - counter.done)  # unreadable files have no answer to wait for
    if cache is not None:
        for rel in readable:
            p = prepared[rel]
            if p.sha:  # (a file that became unreadable since it was hashed is read again next time)
                cache.record(rel, p.size, p.mtime_ns, p.sha, p.lines, p.stamp)
        cache.new.results = {k: results[r] for r, k in keys.items() if k}
        cache.new.answer = TreeAnswer(digest, dict(keys), limits)
        cache.save()
    kernels: list[Kernel] = []
    launches: list[LaunchSite] = []
    problems: list[ParseProblem] = []
    for _, rel in files:
        p = prepared[rel]
        if not p.sha:
            problems.append(ParseProblem(rel, _line_from(p.why), 1, p.why))
            continue
        r = results.get(rel, _EMPTY)
        kernels.extend(r.kernels)
        launches.extend(r.launches)
        problems.extend(r.problems)
    extra = {"files": str(len(files)), "parsed": str(stats["parsed"]), "skipped": str(stats["skipped"]),
             "cached": str(stats["cached"]), "unreadable": str(len(files) - len(readable)), "jobs": str(workers)}
    if cache is not None and cache.warnings:
        extra["warning"] = "; ".join(cache.warnings)
    return Index(
        root=str(tree), kernels=tuple(kernels), launches=tuple(launches), problems=tuple(problems),
        limits=limits, files_scanned=len(readable), lines_scanned=sum(prepared[r].lines for r in readable),
        seconds=time.perf_counter() - start, extra=extra,
    )


_EMPTY = FileResult()


class _Counter:
    def __init__(self, progress: Progress | None) -> None:
        self.progress, self.done, self.total = progress, 0, 0

    def __call__(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress(self.done, max(self.total, self.done))


def _prepare_all(pool: Executor | None, workers: int, files: list[tuple[str, str]], cache: ScanCache | None,
                 counter: _Counter) -> dict[str, Prepared]:
    """Every file's size, mtime, hash and lines; from the cache where its size and mtime are unchanged, else read,
    hashed and its preamble read (in the workers)."""
    prepared: dict[str, Prepared] = {}
    todo: list[tuple[object, ...]] = []
    weights: list[int] = []
    for path, rel in files:
        try:
            st = os.stat(path)
        except OSError:
            todo.append((rel, path))
            weights.append(0)
            continue
        known = cache.known(rel, st.st_size, st.st_mtime_ns, file_stamp(st)) if cache is not None else None
        if known is not None:
            prepared[rel] = Prepared(rel, st.st_size, st.st_mtime_ns, known[0], known[1], None, "", path, file_stamp(st))
            continue
        todo.append((rel, path))
        weights.append(st.st_size)
    counter.total += len(todo) + len(files)  # reading what changed, then every file's answer
    for p in run_all(pool, prepare, todo, weights, counter, workers):
        prepared[p.rel] = p
    return prepared


def _add_included(pool: Executor | None, workers: int, tree: Path, files: list[tuple[str, str]],
                  prepared: dict[str, Prepared], cache: ScanCache | None, counter: _Counter) -> dict[str, str]:
    """Files of any extension that a scanned file `#include`s (CloverLeaf's `kernel_files/*.cuknl`): added to `files`
    and `prepared`, the files they include in turn too; {added file: the file that includes it}. Each file's foreign
    includes come from its preamble, else from the cache (an unchanged tree is not read again)."""
    if not tree.is_dir():
        return {}
    included: dict[str, str] = {}
    todo = [rel for _, rel in files]
    dirs: tuple[str, ...] | None = None
    for _round in range(8):
        includes_of: dict[str, tuple[tuple[str, bool], ...]] = {}
        for rel in todo:
            p = prepared.get(rel)
            if p is None or not p.sha:
                continue
            if p.preamble is not None:
                incs = tuple((w, a) for w, a in p.preamble.includes if is_foreign_include(w, a))
            else:
                incs = cache.old.foreign.get(p.sha, ()) if cache is not None else ()
            if cache is not None and incs:
                cache.new.foreign[p.sha] = incs
            if incs:
                includes_of[rel] = incs
        if includes_of and dirs is None:
            dirs = tree_include_dirs(tree)
        found = included_closure(tree, prepared.keys(), includes_of, dirs or ())
        if not found:
            break
        more = [(os.path.join(tree, rel), rel) for rel in sorted(found)]
        files.extend(more)
        prepared.update(_prepare_all(pool, workers, more, cache, counter))
        included.update(found)
        todo = sorted(found)
    return included


def _preambles(prepared: dict[str, Prepared], readable: list[str], cache: ScanCache | None) -> dict[str, Preamble]:
    """Each readable file's preamble: read just now, else from the cache, else (a damaged cache) read again."""
    out: dict[str, Preamble] = {}
    old = cache.preambles() if cache is not None and any(prepared[r].preamble is None for r in readable) else {}
    for rel in readable:
        p = prepared[rel]
        pre = p.preamble or old.get(p.sha)
        if pre is None:
            again = prepare(rel, p.path)
            prepared[rel] = again
            pre = again.preamble
        if pre is not None:
            out[rel] = pre
    return out


def _scan_all(pool: Executor | None, workers: int, files: list[tuple[str, str]], prepared: dict[str, Prepared],
              preambles: dict[str, Preamble], scope: Scope, cache: ScanCache | None, counter: _Counter,
              stats: dict[str, int]) -> tuple[dict[str, FileResult], dict[str, str]]:
    """Each file's result: ruled out by the pre-filter, from the cache by its key, or parsed (in the workers)."""
    results: dict[str, FileResult] = {}
    keys: dict[str, str] = {}
    jobs: list[tuple[object, ...]] = []
    weights: list[int] = []
    digests: dict[object, str] = {}
    blank = _digest(digests, scope.blank_macros, sorted(scope.blank_macros))
    for path, rel in files:
        pre = preambles.get(rel)
        if pre is None:
            continue
        p = prepared[rel]
        lang = scope.language[rel]
        kmacros = scope.kernel_macros[rel]
        lmacros = scope.launch_macros[rel]
        if not (pre.opencl_word if lang == "opencl" else pre.markers or kmacros or lmacros):
            results[rel], keys[rel] = _EMPTY, ""  # the pre-filter: no kernel, launch or kernel macro can be here
            stats["skipped"] += 1
            counter(1)
            continue
        lm = tuple(lmacros[n] for n in sorted(lmacros))
        key = hashlib.sha256("\0".join((
            p.sha, rel, lang, _digest(digests, kmacros, sorted(kmacros)), _digest(digests, lm, lm), blank,
        )).encode()).hexdigest()[:32]
        keys[rel] = key
        hit = cache.old.results.get(key) if cache is not None else None
        if hit is not None:
            results[rel] = hit
            stats["cached"] += 1
            counter(1)
            continue
        jobs.append((ScanJob(rel, path, p.size, p.mtime_ns, lang, kmacros, lm, scope.blank_macros),))
        weights.append(p.size)
    for (job,), r in zip(jobs, run_all(pool, scan_file, jobs, weights, counter, workers)):
        results[job.rel] = r  # type: ignore[attr-defined]
        stats["parsed" if r.parsed else "skipped"] += 1
    return results, keys


def _digest(memo: dict[object, str], key: frozenset[str] | tuple[LaunchMacro, ...], value: object) -> str:
    if key not in memo:
        memo[key] = hashlib.sha256(repr(value).encode()).hexdigest()[:16]
    return memo[key]


def _line_from(why: str) -> int:
    m = re.search(r"at line (\d+)", why)
    return int(m.group(1)) if m else 1


def find_kernel(index: Index, name: str) -> Kernel:
    """The one kernel called `name` (plain, qualified, or `file:name`, each optionally `@line` for overloads in one
    file), or a UserError with choices."""
    want_file, want_line = "", 0
    at = re.fullmatch(r"(.+)@(\d+)", name)
    if at:
        name, want_line = at.group(1), int(at.group(2))
    if ":" in name and "::" not in name.split(":", 1)[0] + ":":
        head, _, tail = name.rpartition(":")
        if head and not head.endswith(":") and not tail.startswith(":"):
            want_file, name = head, tail
    exact = [k for k in index.kernels if k.qualified == name or (("::" not in name) and k.name == name)]
    if want_file:
        exact = [k for k in exact if k.file == want_file or k.file.endswith("/" + want_file)]  # whole path components
        if any(k.file == want_file for k in exact):  # `app.cu:k` names app.cu itself, not old/app.cu
            exact = [k for k in exact if k.file == want_file]
    if want_line:
        exact = [k for k in exact if k.line == want_line]
    if len(exact) == 1:
        return exact[0]
    if not exact:
        import difflib

        names = sorted({k.qualified for k in index.kernels} | {k.name for k in index.kernels})
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else f"the tree has {len(index.kernels)} kernels: run `s2s scan {index.root}`"
        raise UserError(f"no kernel named '{name}'", file=index.root, hint=hint)
    listing = "; ".join(f"{k.qualified} at {k.file}:{k.line}" for k in exact)
    same_file = len({k.file for k in exact}) == 1
    example = f"{exact[0].file}:{exact[0].name}" + (f"@{exact[0].line}" if same_file else "")
    raise UserError(f"kernel name '{name}' is ambiguous: {listing}", file=index.root,
                    hint=f"pick one as FILE:NAME{'@LINE' if same_file else ''}, e.g. --kernel {example}")
