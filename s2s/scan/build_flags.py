"""Compile flags from a Makefile when there is no compile_commands.json.

Real trees often keep their include paths and size macros only in the Makefile. This reads `-D` and `-I`
flags from the Makefiles next to the unit and above it, expanding simple variables
(`NX ?= 64`, `CFLAGS += -DNX=$(NX) -Iinclude`). It is a heuristic and says so; a compile_commands.json
(`make compdb`, `bear -- make`, CMake's CMAKE_EXPORT_COMPILE_COMMANDS) is always preferred.
"""
from __future__ import annotations

import re
from pathlib import Path

from .compdb import CompileCommand

_ASSIGN = re.compile(r"^\s*(?:override\s+|export\s+)?([A-Za-z_][\w.]*)\s*(\?=|:=|::=|\+=|=)\s*(.*?)\s*$")
_VAR = re.compile(r"\$[({]([A-Za-z_][\w.]*)[)}]")
_FLAG = re.compile(r"(?<![\w-])(-D[A-Za-z_]\w*(?:=\S+)?|-I\s*\S+)")
NAMES = ("Makefile", "makefile", "GNUmakefile")


def _variables(text: str) -> dict[str, str]:
    env: dict[str, str] = {}
    joined = text.replace("\\\n", " ")
    for line in joined.splitlines():
        m = _ASSIGN.match(line)
        if not m or line.startswith("\t"):
            continue
        name, op, value = m.groups()
        if op == "?=" and name in env:
            continue
        env[name] = (env.get(name, "") + " " + value).strip() if op == "+=" else value
    return env


def _expand(text: str, env: dict[str, str], depth: int = 0) -> str:
    if depth > 8:
        return text
    out = _VAR.sub(lambda m: env.get(m.group(1), ""), text)
    return out if out == text else _expand(out, env, depth + 1)


def makefile_command(unit: Path, tree: Path) -> tuple[CompileCommand | None, str]:
    """A compile command for `unit` built from the nearest Makefile's -D and -I flags, and where they came from."""
    d = unit.parent
    while True:
        for name in NAMES:
            mk = d / name
            if mk.is_file():
                try:
                    text = mk.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                env = _variables(text)
                flags: list[str] = []
                for m in _FLAG.finditer(_expand(text.replace("\\\n", " "), env)):
                    flag = m.group(1).replace(" ", "")
                    if "$" in flag or flag in flags:
                        continue
                    flags.append(flag)
                if flags:
                    args = ("cc", *flags, "-c", str(unit))
                    return CompileCommand(file=unit, directory=d, args=args), f"flags read from {mk.relative_to(tree) if mk.is_relative_to(tree) else mk} (no compile_commands.json; heuristic)"
        if d == tree or d.parent == d or not d.is_relative_to(tree):
            return None, ""
        d = d.parent

