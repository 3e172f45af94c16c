"""Compile flags from the build itself: the compiler invocations of a dry run of the user's build command.

`make` prints every command it would run with `-n` (and `-B`: as if nothing were built yet; `-w`: the directories
it enters), running none of them; the printed compiler lines are the real flags of each translation unit, with the
Makefile's conditionals, included fragments and default target already resolved by make itself. The dry run happens
in a scratch copy of the tree, since a Makefile's `$(shell ...)` runs even under -n. (compiledb, the usual parser of
such logs, recognises neither nvcc nor .cu files, so the lines are read here: shell-split, one command per `&&`/`;`.)
"""
from __future__ import annotations

import os
import re
import shlex
import tempfile
from pathlib import Path

from s2s.base.procs import run_group
from s2s.base.treefiles import copy_tree

from .compdb import CompileCommand

COMPILERS = re.compile(r"(?:.*/)?(?:nvcc|hipcc|amdclang\+\+|clang\+\+|clang|g\+\+|gcc|c\+\+|cc|mpicxx|mpic\+\+|mpicc|icpx|"
                       r"icx|nvc\+\+|nvc|xlc\+\+|CC)(?:-[\d.]+)?$")
SOURCES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".hip", ".cl", ".C")
_ENTER = re.compile(r"make(?:\[\d+\])?: Entering directory [`'\"](.*)[`'\"]")
_LEAVE = re.compile(r"make(?:\[\d+\])?: Leaving directory")
DRY_RUN_KEEP = 32 << 20  # bytes of a dry run's output kept from its start and its end (a large build prints MBs)


def dry_run_command(build_cmd: str) -> str | None:
    """`make -j8 ep CLASS=S` -> `make -n -B -w -j8 ep CLASS=S` (every make of the command); None: no make in it."""
    words = build_cmd.split()
    if not any(w == "make" or w.endswith("/make") or w == "gmake" for w in words):
        return None
    return re.sub(r"(^|[;&|(]\s*|\s)((?:\S*/)?g?make)(?=\s|$)", r"\1\2 -n -B -w", build_cmd)


def parse_log(log: str, start_dir: Path) -> list[CompileCommand]:
    """The compiler invocations printed by a dry run, each with the directory it runs in."""
    out: list[CompileCommand] = []
    dirs = [start_dir]
    for line in log.replace("\\\n", " ").splitlines():
        m = _ENTER.search(line)
        if m:
            dirs.append(Path(m.group(1)))
            continue
        if _LEAVE.search(line):
            if len(dirs) > 1:
                dirs.pop()
            continue
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        cwd = dirs[-1]
        for cmd in _commands(words):
            if cmd and cmd[0] == "cd" and len(cmd) > 1:
                cwd = (cwd / cmd[1]).resolve()
                continue
            start = next((i for i, w in enumerate(cmd[:3]) if COMPILERS.fullmatch(w)), -1)
            if start < 0 or "-c" not in cmd and "--compile" not in cmd and "-dc" not in cmd:
                continue
            args = cmd[start:]
            for src in (a for a in args[1:] if a.endswith(SOURCES) and not a.startswith("-")):
                out.append(CompileCommand(file=(cwd / src).resolve(), directory=cwd, args=tuple(args)))
    return out


def _commands(words: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for w in words:
        if w in {"&&", ";", "||", "|"}:
            out.append([])
        elif w.endswith(";") and len(w) > 1:
            out[-1].append(w[:-1])
            out.append([])
        else:
            out[-1].append(w)
    return out


def commands_in_text(build_cmd: str, tree: Path) -> dict[Path, CompileCommand]:
    """{unit: command} of a build command that calls the compiler itself (`nvcc -O3 -Iinc -o app *.cu`): each
    compiler word's sources, globs expanded in the tree as the shell would, `cd DIR` followed. Nothing is run."""
    try:
        words = shlex.split(build_cmd)
    except ValueError:
        return {}
    out: dict[Path, CompileCommand] = {}
    cwd = tree
    for cmd in _commands(words):
        if cmd and cmd[0] == "cd" and len(cmd) > 1:
            cwd = (cwd / cmd[1]).resolve()
            continue
        start = next((i for i, w in enumerate(cmd[:3]) if COMPILERS.fullmatch(w)), -1)
        if start < 0:
            continue
        args = cmd[start:]
        units: list[Path] = []
        for prev, a in zip(["", *args[1:]], args[1:]):
            if a.startswith("-") or prev == "-o" or not a.endswith(SOURCES):
                continue
            units += sorted(cwd.glob(a)) if any(c in a for c in "*?[") else [cwd / a]
        for unit in units:
            unit = unit.resolve()
            if unit.is_file() and unit.is_relative_to(tree.resolve()):
                out.setdefault(unit, CompileCommand(file=unit, directory=cwd, args=tuple(args)))
    return out


def commands_from_build(tree: Path, build_cmd: str, timeout_s: float = 120.0) -> tuple[dict[Path, CompileCommand], str]:
    """{unit: command} from a dry run of `build_cmd` in a scratch copy of `tree`, paths mapped back to the tree, and a
    sentence saying where the flags came from (or why there are none)."""
    dry = dry_run_command(build_cmd)
    if dry is None:
        direct = commands_in_text(build_cmd, tree)
        if direct:
            return direct, f"the compiler invocation(s) of the build command '{build_cmd}'"
        return {}, f"the build command '{build_cmd}' runs no make: its compiler invocations are not known without a build"
    with tempfile.TemporaryDirectory(prefix="s2s-dry-") as tmp:
        copy = Path(tmp) / tree.name
        copy_tree(tree, copy, (".git",))
        # the user's command (its `$(shell ...)` and recursive makes run): in its own session, killed whole
        p = run_group(dry, cwd=copy, timeout_s=timeout_s, env={**os.environ, "LC_ALL": "C"}, keep=DRY_RUN_KEEP)
        if p.timed_out:
            return {}, f"the dry run '{dry}' did not finish in {timeout_s:.0f} s"
        found = parse_log(p.output, copy)
        real = copy.resolve()
        out: dict[Path, CompileCommand] = {}
        for c in found:
            if not c.file.is_relative_to(real):
                continue
            unit = tree / c.file.relative_to(real)
            directory = tree / c.directory.relative_to(real) if c.directory.is_relative_to(real) else c.directory
            args = tuple(a.replace(str(real), str(tree)) for a in c.args)
            out.setdefault(unit.resolve(), CompileCommand(file=unit.resolve(), directory=directory, args=args))
    if not out:
        tail = (p.output.strip().splitlines() or [""])[-1][:160]
        return {}, f"the dry run '{dry}' printed no compiler invocation (rc {p.returncode}{': ' + tail if tail else ''})"
    return out, f"compiler invocations of '{dry}' (a dry run of the build command)"
