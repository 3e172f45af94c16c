"""Headers the build writes before it compiles (NPB's `npbparams.hpp` from `setparams`, a CMake `configure_file`):
included by the sources, absent from the tree, named by its build files. Extraction reads them from the build itself,
run in a scratch copy of the tree only until they exist, then stopped with every process it started; the tree is
never written. A header the build does not write stays missing (its names FILL-IN or a compile error), never guessed.
"""
from __future__ import annotations

import os
import re
import tempfile
import threading
from pathlib import Path

from s2s.base.procs import kill_group, run_group
from s2s.base.treefiles import copy_tree

BUILD_FILE_NAMES = {"makefile", "gnumakefile", "cmakelists.txt", "configure", "configure.ac", "meson.build"}
BUILD_FILE_SUFFIXES = (".mk", ".make", ".cmake", ".sh", ".def", ".common", ".am", ".in")

_cache: dict[tuple[str, str, tuple[str, ...]], dict[str, bytes]] = {}
_lock = threading.Lock()


def _build_files_text(tree: Path) -> str:
    parts: list[str] = []
    for d, dirs, files in os.walk(tree):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        for f in files:
            if f.lower() in BUILD_FILE_NAMES or f.lower().startswith("makefile") or f.endswith(BUILD_FILE_SUFFIXES):
                try:
                    parts.append((Path(d) / f).read_text(encoding="utf-8", errors="replace")[:1_000_000])
                except OSError:
                    continue
    return "\n".join(parts)


def build_written(tree: Path, missing: list[str]) -> list[str]:
    """Those of the `missing` quoted includes (as written) that the tree's build files name (`npbparams.hpp:` in a
    Makefile, `configure_file(... config.h)`): headers its build writes. Others are not looked for."""
    if not missing:
        return []
    text = _build_files_text(tree)
    return [m for m in dict.fromkeys(missing)
            if re.search(r"(?<![\w.-])" + re.escape(Path(m).name) + r"(?![\w.-])", text)]


def generate(tree: Path, build_cmd: str, wanted: list[str], timeout_s: float = 180.0) -> dict[str, bytes]:
    """{path relative to the tree: content} of the headers the build command writes into a scratch copy of `tree`
    that the tree lacks, once every one of `wanted` (names as included) exists there, or the build ended or ran
    `timeout_s`; the build is stopped as soon as they exist. Cached for the process (same tree, command, names)."""
    tree = tree.resolve()
    key = (str(tree), build_cmd, tuple(sorted(set(wanted))))
    with _lock:
        if key in _cache:
            return dict(_cache[key])
    names = {Path(w).name for w in wanted}
    with tempfile.TemporaryDirectory(prefix="s2s-genhdr-") as tmp:
        copy = Path(tmp) / tree.name
        copy_tree(tree, copy, (".git",))
        stop = threading.Event()

        def found() -> dict[str, bytes]:
            out: dict[str, bytes] = {}
            for d, dirs, files in os.walk(copy):
                dirs[:] = [x for x in dirs if not x.startswith(".")]
                for f in files:
                    rel = (Path(d) / f).relative_to(copy)
                    if f in names and not (tree / rel).exists():
                        try:
                            out[rel.as_posix()] = (Path(d) / f).read_bytes()
                        except OSError:
                            continue
            return out

        def watch(pid: int) -> None:
            last: dict[str, bytes] | None = None
            while not stop.wait(0.25):
                now = found()
                if {Path(r).name for r in now} >= names and all(now.values()) and now == last:
                    kill_group(pid)  # every header there, and unchanged since the last look: written
                    return
                last = now

        def on_start(pid: int, _marker: str) -> None:
            threading.Thread(target=watch, args=(pid,), daemon=True).start()

        try:
            run_group(build_cmd, cwd=copy, timeout_s=timeout_s, env={**os.environ, "LC_ALL": "C"}, keep=1 << 16,
                      on_start=on_start)
        finally:
            stop.set()
        got = found()
    with _lock:
        _cache[key] = got
    return dict(got)
