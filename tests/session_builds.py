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

