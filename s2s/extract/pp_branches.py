"""The parts of a host source file that the preprocessor drops under the launching unit's macros.

Host code is parsed without a preprocessor, so `#ifdef USE_DOUBLE double* d; int n = 2 * W; #else float* d; int n
= W; #endif` holds two declarations of each name, and the later (`#else`) one used to be read. The macros are the
unit's own (its files and the project headers it includes, -D flags), so a branch whose condition they decide is
dropped; a condition they cannot decide (a compiler's own macro such as __CUDACC__, an expression on a name not
known) keeps every branch of its group, as before.
"""
from __future__ import annotations

import re

from s2s.lang.cexpr import try_evaluate
from s2s.lang.textsplit import CONDITIONALS

Macros = dict[str, tuple[str, str]]
_DEFINE = re.compile(rb"\s*#[ \t]*define[ \t]+(\w+)([^\n]*)")


def condition_holds(word: str, cond: str, macros: Macros) -> bool | None:
    """Whether `#if COND` (`#ifdef NAME`, `#ifndef NAME`) holds under the macros; None when not decided (a name of
    the implementation's, with a leading underscore, or a value that does not evaluate)."""
    cond = re.sub(r"//.*|/\*.*?\*/", " ", cond).strip()
    if word in {"ifdef", "ifndef"}:
        name = cond.split()[0] if cond else ""
        if not name or name.startswith("_"):
            return None
        return (name in macros) == (word == "ifdef")
    if re.search(r"\b_\w+", cond):
        return None
    return expression_holds(cond, macros)


def expression_holds(cond: str, macros: Macros) -> bool | None:
    """Whether the expression of an `#if` holds under the macros (defined(X) by their names, character constants by
    their codes, names by their values); None when it does not evaluate."""
    cond = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)|\bdefined\s+(\w+)",
                  lambda m: "1" if (m.group(1) or m.group(2)) in macros else "0", cond)
    cond = re.sub(r"'(\\?.)'", lambda m: str(ord(m.group(1)[-1])), cond)

    def resolve(name: str, seen: frozenset[str] = frozenset()) -> float | int | None:
        if name not in macros or name in seen:
            return None
        value = re.sub(r"'(.)'", lambda m: str(ord(m.group(1))), macros[name][0])
        return try_evaluate(value, lambda n: resolve(n, seen | {name}))

    v = try_evaluate(cond, resolve)
    return None if v is None else bool(v)


def _self_guard(data: bytes, end: int, cond: bytes, macros: Macros) -> bool:
    """`#ifndef X` followed by `#define X` (an include guard, or a default the unit does not override): not decided
    by X being defined, since that #define is what defines it; a default the unit overrides (`#define X 16` under
    `#ifndef X` where a header says 96) is decided."""
    m = _DEFINE.match(data, end)
    name = cond.split()[0].decode("utf-8", "replace") if cond.split() else ""
    if m is None or m.group(1).decode() != name:
        return False
    own = m.group(2).decode("utf-8", "replace").strip()
    return name not in macros or macros[name][0].strip() == own


def branch_ranges(data: bytes, macros: Macros) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Byte ranges [start, end) of the branches the preprocessor drops, and of the branches of groups whose
    conditions the macros do not decide (each may or may not be compiled). A group inside an undecided branch is
    undecided; an include guard, or a default the unit keeps (`#ifndef X` then `#define X`), is taken."""
    dropped: list[tuple[int, int]] = []
    undecided: list[tuple[int, int]] = []
    # per open group: decided, a branch taken already, the start of the current branch's body
    stack: list[tuple[bool, bool, int]] = []

    def close(group: tuple[bool, bool, int], at: int, kept: bool) -> None:
        decided, _taken, start = group
        if not decided:
            undecided.append((start, at))
        elif not kept:
            dropped.append((start, at))

    keep: list[bool] = []  # whether the current branch of each open group is kept (decided groups only)
    for m in CONDITIONALS.finditer(data):
        word, cond = m.group(1).decode(), m.group(2)
        body = m.end() + 1
        if word in {"if", "ifdef", "ifndef"}:
            outside = all(d for d, _t, _s in stack) and all(keep)
            guard = word == "ifndef" and _self_guard(data, body, cond, macros)
            holds = True if guard else condition_holds(word, cond.decode("utf-8", "replace"), macros) if outside else None
            stack.append((holds is not None, bool(holds), body))
            keep.append(bool(holds) if holds is not None else True)
        elif word in {"elif", "else"} and stack:
            group = stack.pop()
            close(group, m.start(), keep.pop())
            decided, taken, _start = group
            branch: bool | None = True
            if word == "elif" and decided and not taken:
                branch = condition_holds("if", cond.decode("utf-8", "replace"), macros)
            if not decided or branch is None:
                stack.append((False, taken, body))
                keep.append(True)
            else:
                stack.append((True, taken or branch, body))
                keep.append(branch and not taken)
        elif word == "endif" and stack:
            close(stack.pop(), m.start(), keep.pop())
    return dropped, undecided


def inactive_ranges(data: bytes, macros: Macros) -> list[tuple[int, int]]:
    """The byte ranges of the branches the preprocessor drops (see branch_ranges)."""
    return branch_ranges(data, macros)[0]
