"""Compile flags from a Makefile when there is no compile_commands.json.

Real trees often keep their include paths and size macros only in the Makefile. This reads `-D` and `-I`
flags from the Makefiles next to the unit and above it, expanding simple variables
(`NX ?= 64`, `CFLAGS += -DNX=$(NX) -Iinclude`). It is a heuristic and says so; a compile_commands.json
(`make compdb`, `bear -- make`, CMake's CMAKE_EXPORT_COMPILE_COMMANDS) is always preferred.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from s2s.base.treefiles import read_regular

from .compdb import CompileCommand
from .sources import language_of

_ASSIGN = re.compile(r"^\s*(?:override\s+|export\s+)?([A-Za-z_][\w.]*)\s*(\?=|:=|::=|\+=|=)\s*(.*?)\s*$")
_VAR = re.compile(r"\$[({]([A-Za-z_][\w.]*)[)}]")
_FLAG = re.compile(r"(?<![\w-])(-D\s*[A-Za-z_]\w*(?:=\S+)?|-I\s*\S+)")
NAMES = ("Makefile", "makefile", "GNUmakefile")
# a HIP build's compiler, variables and flags (HIPCC, HIP_FLAGS, ROCM_PATH, -D__HIP_PLATFORM_AMD__, --offload-arch):
# a CUDA unit's flags never come from them
_HIP = re.compile(r"hipcc|(?<![A-Za-z])(?:HIP|ROCM|ROCm|AMD)(?![a-z])|__HIP_|/rocm|--offload-arch|amdgpu", re.I)


def _logical_lines(text: str) -> list[str]:
    """Lines with continuations joined and comments dropped (`#` unless escaped; a commented-out flag is no flag)."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        out.append(re.sub(r"(?<!\\)#.*$", "", line).rstrip())
    return out


def _cond_true(line: str, env: dict[str, str]) -> bool | None:
    word, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    if word in {"ifdef", "ifndef"}:
        has = bool(_expand(env.get(rest, ""), env).strip())
        return has if word == "ifdef" else not has
    if word in {"ifeq", "ifneq"}:
        m = re.fullmatch(r"\((.*),(.*)\)", rest) or re.fullmatch(r"[\"'](.*)[\"']\s+[\"'](.*)[\"']", rest)
        if not m:
            return None
        same = _expand(m.group(1), env).strip() == _expand(m.group(2), env).strip()
        return same if word == "ifeq" else not same
    return None


def _read(mk: Path, env: dict[str, str], rules: list[tuple[str, list[str]]], depth: int = 0) -> None:
    """Variables (into env) and rules [(targets and prerequisites line, recipe lines)] of the active branches of a
    Makefile and the fragments it `include`s (relative to its own directory)."""
    data, _why, _st = read_regular(mk)  # a FIFO or a link to /dev/zero named in an `include` is not waited on
    if data is None:
        return
    text = data.decode("utf-8", "replace")
    stack: list[tuple[bool, bool]] = []  # (this branch active, some branch taken)
    for line in _logical_lines(text):
        head = line.strip()
        word = head.split(" ", 1)[0] if head else ""
        if word in {"ifeq", "ifneq", "ifdef", "ifndef"}:
            holds = _cond_true(head, env) if all(a for a, _ in stack) else False
            active = bool(holds)
            stack.append((active, active))
            continue
        if word == "else" and stack:
            rest = head[4:].strip()
            holds = _cond_true(rest, env) if rest else True
            active = not stack[-1][1] and bool(holds)
            stack[-1] = (active, stack[-1][1] or active)
            continue
        if word == "endif" and stack:
            stack.pop()
            continue
        if not all(a for a, _ in stack):
            continue
        if line.startswith("\t"):
            if rules:
                rules[-1][1].append(line.strip())
            continue
        if word in {"include", "-include", "sinclude"} and depth < 6:
            for name in _expand(head.split(None, 1)[1] if " " in head else "", env).split():
                for frag in sorted((mk.parent).glob(name)) if any(c in name for c in "*?[") else [mk.parent / name]:
                    if frag.is_file():
                        _read(frag, env, rules, depth + 1)
            continue
        m = _ASSIGN.match(line)
        if m:
            name, op, value = m.groups()
            if op == "?=" and name in env:
                continue
            if op in {":=", "::="}:
                value = _expand(value, env)
            env[name] = (env.get(name, "") + " " + value).strip() if op == "+=" else value
            continue
        if ":" in line and not line.startswith((" ", "\t")) and "=" not in line.split(":", 1)[0]:
            rules.append((line, []))


def read_makefile(mk: Path) -> tuple[dict[str, str], list[tuple[str, list[str]]]]:
    """The variables and rules of a Makefile's active branches (see _read)."""
    env: dict[str, str] = {}
    rules: list[tuple[str, list[str]]] = []
    _read(mk, env, rules)
    return env, rules


def expand(text: str, env: dict[str, str]) -> str:
    """`$(VAR)` and `${VAR}` replaced by their values; a variable nobody sets becomes `$?`."""
    return _expand(text, env)


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
    # a variable neither the Makefile nor the environment sets stays visible ($?), so that its flag is dropped
    out = _VAR.sub(lambda m: env.get(m.group(1), os.environ.get(m.group(1), "$?")), text)
    return out if out == text else _expand(out, env, depth + 1)


def _default_recipes(rules: list[tuple[str, list[str]]], env: dict[str, str]) -> list[str]:
    """Recipe lines of the default goal (the first ordinary target), of what it depends on, and of pattern rules."""
    by_target: dict[str, tuple[list[str], list[str]]] = {}
    first = ""
    pattern: list[str] = []
    for head, recipe in rules:
        targets, _, prereqs = _expand(head, env).partition(":")
        prereqs = prereqs.lstrip(":").split(";")[0]
        for t in targets.split():
            if "%" in t or re.fullmatch(r"\.\w+\.\w+", t):
                pattern += recipe
                continue
            if t.startswith("."):
                continue
            first = first or t
            deps, lines = by_target.setdefault(t, ([], []))
            deps += prereqs.split()
            lines += recipe
    goal = _expand(env.get(".DEFAULT_GOAL", ""), env).strip() or first
    out: list[str] = []
    seen: set[str] = set()
    todo = [goal] if goal else []
    while todo:
        t = todo.pop()
        if t in seen or t not in by_target:
            continue
        seen.add(t)
        out += by_target[t][1]
        todo += by_target[t][0]
    return out + pattern


def _is_cuda(unit: Path) -> bool:
    data, _why, _st = read_regular(unit)
    return language_of(unit, data or b"") == "cuda"


def makefile_command(unit: Path, tree: Path) -> tuple[CompileCommand | None, str]:
    """A compile command for `unit` built from the nearest Makefile's -D and -I flags, and where they came from."""
    d = unit.parent
    while True:
        for name in NAMES:
            mk = d / name
            if mk.is_file():
                env: dict[str, str] = {}
                rules: list[tuple[str, list[str]]] = []
                _read(mk, env, rules)
                cuda = _is_cuda(unit)
                recipes = " ".join(r for r in _default_recipes(rules, env) if not (cuda and _HIP.search(_expand(r, env))))
                source_text = _expand(recipes, env) if _FLAG.search(_expand(recipes, env)) else " ".join(
                    _expand(v, env) for k, v in env.items() if re.search(r"FLAGS|DEFINES|INCLUDES|OPTIONS|DEFS", k)
                    and not (cuda and _HIP.search(k)))
                flags: list[str] = []
                for m in _FLAG.finditer(source_text):
                    flag = m.group(1).replace(" ", "")
                    if "$" in flag or flag in flags or (cuda and _HIP.search(flag)):
                        continue
                    flags.append(flag)
                if flags:
                    args = ("cc", *flags, "-c", str(unit))
                    return CompileCommand(file=unit, directory=d, args=args), f"flags read from {mk.relative_to(tree) if mk.is_relative_to(tree) else mk} (no compile_commands.json; heuristic)"
        if d == tree or d.parent == d or not d.is_relative_to(tree):
            return None, ""
        d = d.parent

