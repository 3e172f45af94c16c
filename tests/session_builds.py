"""Build products shared by the tests of one pytest session, on every xdist worker: each is made once, keyed by
everything its result depends on, so that sharing it changes no test's outcome.

conftest (on the controller) creates the directory and names it in S2S_TEST_SHARED for the workers and their children,
and removes it when the session ends. Without it (a helper called outside pytest) nothing is shared and every caller
builds for itself, as before.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

ENV = "S2S_TEST_SHARED"


def shared_dir() -> Path | None:
    value = os.environ.get(ENV)
    return Path(value) if value and Path(value).is_dir() else None


def key_of(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:32]


def built_once(name: str, key: str, build: Callable[[Path], None]) -> Path | None:
    """The session's directory `name`-`key`, `build(directory)` run on it by the first caller (the others wait on a
    lock); None without a shared directory or when the build failed (the caller then does without)."""
    root = shared_dir()
    if root is None:
        return None
    done = root / f"{name}-{key}"
    if done.is_dir():
        return done
    with open(root / f"{name}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_dir():
            return done
        work = root / f"{name}-{key}.partial"
        work.mkdir(exist_ok=True)
        try:
            build(work)
        except (OSError, subprocess.SubprocessError, AssertionError):
            return None
        work.rename(done)
    return done


def precompiled(compiler: str, flags: Sequence[str], headers: str) -> str:
    """The lines that begin a program compiled with `compiler *flags`: `headers` (its #include lines) as they are, or
    one #include of them from the session's precompiled header (built once with the same compiler and flags; g++
    takes a .gch beside the header only where it was made with those flags, and reads the same declarations as from
    the text: about 0.5 of the 1.0 CPU-seconds an emulated kernel's program took went to <barrier>, <thread> and the
    rest of the standard library)."""
    def build(work: Path) -> None:
        (work / "headers.h").write_text(headers)
        proc = subprocess.run([compiler, *flags, "-x", "c++-header", str(work / "headers.h"), "-o",
                               str(work / "headers.h.gch")], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]

    done = built_once("pch", key_of(compiler, *flags, headers), build)
    return f'#include "{done / "headers.h"}"\n' if done is not None else headers


THREADED_FLAGS = ("-O1", "-std=c++20", "-pthread", "-w")  # the threaded CPU emulators' g++ flags


def compile_threaded(compiler: str, source: Path, text: str, exe: Path) -> subprocess.CompletedProcess[str]:
    """g++ with THREADED_FLAGS over a program `text` (written to `source`) whose leading `#include <...>` lines are
    read from the session's precompiled header of those lines."""
    lines = text.splitlines(keepends=True)
    n = next((i for i, ln in enumerate(lines) if not ln.startswith("#include <")), len(lines))
    source.write_text(precompiled(compiler, THREADED_FLAGS, "".join(lines[:n])) + "".join(lines[n:]))
    return subprocess.run([compiler, *THREADED_FLAGS, str(source), "-o", str(exe)], capture_output=True, text=True,
                          timeout=120)


_INCLUDE_NAME = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)
_INCLUDE_MACRO = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[^<"\s]', re.M)  # `#include SOME_MACRO`: not followed here


def _include_dirs(flags: Sequence[str]) -> list[Path]:
    dirs, it = [], iter(flags)
    for f in it:
        if f == "-I":
            dirs.append(Path(next(it, "")))
        elif f.startswith("-I"):
            dirs.append(Path(f[2:]))
    return dirs


def check_key(flags: Sequence[str], file: Path) -> str:
    """What a compile check of `file` with `flags` depends on: the flags other than -I, the file's suffix and bytes,
    and each header it (or a header it includes) names that is found beside it or on an -I directory, by its
    place and bytes. An -I directory that holds none of the names included is left out: it cannot change the outcome.
    A file that includes a macro's expansion keeps its own directory in the key (shared with no other place)."""
    dirs = [d.resolve() for d in _include_dirs(flags)]
    seen: dict[Path, bytes] = {}
    todo = [file.resolve()]
    used: set[Path] = set()
    while todo:
        path = todo.pop()
        data = path.read_bytes()
        seen[path] = data
        if _INCLUDE_MACRO.search(data.decode("utf-8", "replace")):
            used.add(path.parent)
            dirs.append(path.parent)
        for name in _INCLUDE_NAME.findall(data.decode("utf-8", "replace")):
            for d in [path.parent, *dirs]:
                found = (d / name).resolve()
                if found.is_file():
                    used.update(x for x in dirs if x == d)
                    if found not in seen and found not in todo:
                        todo.append(found)
    parts: list[str | bytes] = [f for f in flags if not f.startswith("-I") and f not in {str(d) for d in _include_dirs(flags)}]
    parts += [str(d) for d in dirs if d in used]
    parts += [file.suffix, seen.pop(file.resolve())]
    for path in sorted(seen):
        parts += [str(path) if path.parent != file.resolve().parent else path.name, seen[path]]
    return key_of(*parts)


def nvcc_checks(nvcc: str, flags: Sequence[str], files: Sequence[Path], output_dir: Path,
                timeout: float, chunk: int = 8) -> subprocess.CompletedProcess[str]:
    """`nvcc FLAGS FILES --output-directory OUTPUT_DIR` (a compile check: the outputs are not read) over the files
    whose check_key has not compiled cleanly yet in this session: a file with the same bytes, headers and flags as one
    another test (or this call) compiled is not compiled again. `chunk` files an nvcc, each chunk marked done as it
    passes, so that a test running beside this one on another worker skips what this one has checked so far (and
    this one what it checked). The first failing chunk's result is returned as nvcc gave it; when every chunk passed
    (or nothing was left), a clean result with their output."""
    keys = {Path(f): check_key(flags, Path(f)) for f in files}
    root = shared_dir()
    done = root / "nvcc-checked" if root is not None else None
    todo: dict[str, Path] = {}
    for f, k in keys.items():
        todo.setdefault(k, f)
    out, err = [], []
    while todo:
        batch = [k for k in todo if done is None or not (done / k).exists()][:chunk]
        if not batch:
            break
        cmd = [nvcc, *flags, *(str(todo[k]) for k in batch), "--output-directory", str(output_dir)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            return proc
        out.append(proc.stdout)
        err.append(proc.stderr)
        for k in batch:
            del todo[k]
            if done is not None:
                done.mkdir(exist_ok=True)
                (done / k).touch()
    return subprocess.CompletedProcess([nvcc, *flags], 0, "".join(out), "".join(err))
