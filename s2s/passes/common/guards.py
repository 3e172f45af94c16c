"""Guards of a thread-per-item kernel, read for the passes that keep every thread of a block alive (warp-rows,
smem-allpairs): `if (i >= n) return;`, a last `if (i < n) { ... }`, and which bounds are the same for every thread."""
from __future__ import annotations

import re

from tree_sitter import Node

from s2s.lang.kernel_facts import THREAD_BUILTIN, KernelFacts, idents

from .tree import statements, text


def loop_block(source: bytes, top: list[Node], loop_start: int, var: str) -> tuple[list[Node], Node | None]:
    """The statements holding the loop: the kernel body's, or those of a guard `if (<row test>) { ... }` (no else) around
    it, whose test every lane of a row evaluates alike (only the row variable and no other thread index)."""
    if any(s.start_byte == loop_start for s in top):
        return top, None
    for s in top[-1:]:  # the last statement: what followed it would run on every lane of a row past the guard
        cons = s.child_by_field_name("consequence") if s.type == "if_statement" else None
        if cons is None or cons.type != "compound_statement" or s.child_by_field_name("alternative") is not None:
            continue
        cond = text(source, s.child_by_field_name("condition"))
        if var in idents(cond) and not THREAD_BUILTIN.search(cond) and any(c.start_byte == loop_start for c in statements(cons)):
            return statements(cons), s
    return [], None


def guard_bound(source: bytes, guard: Node, i: str) -> str | None:
    cond = text(source, guard.child_by_field_name("condition")).strip()
    cond = cond[1:-1].strip() if cond.startswith("(") and cond.endswith(")") else cond
    cons = text(source, guard.child_by_field_name("consequence")).strip("{} \n\t;")
    m = re.fullmatch(rf"{i}\s*>=\s*(.+)", cond) or re.fullmatch(rf"(.+?)\s*<=\s*{i}", cond)
    return m.group(1).strip() if m and cons == "return" and guard.child_by_field_name("alternative") is None else None


def uniform_names(facts: KernelFacts) -> set[str]:
    """Names whose value is the same for every thread: scalar parameters, and macros or constants (names the kernel
    neither declares nor takes as a pointer)."""
    local = set(facts.locals) | set(facts.thread_vars) | {p.name for p in facts.params if p.pointer}
    body_names = {v for lp in facts.loops for v in idents(lp.bound)}
    return {p.name for p in facts.params if not p.pointer} | {v for v in body_names if v not in local
                                                              and v not in {"threadIdx", "blockIdx", "blockDim", "gridDim"}}


def wrapper(source: bytes, top: list[Node], i: str) -> Node | None:
    """The kernel's last statement when it is `if (i < n) { ... }` (no else) and holds a loop."""
    last = top[-1] if top else None
    if last is None or last.type != "if_statement" or last.child_by_field_name("alternative") is not None:
        return None
    cons = last.child_by_field_name("consequence")
    if cons is None or cons.type != "compound_statement" or wrapper_bound(source, last, i) is None:
        return None
    return last if any(c.type == "for_statement" for c in statements(cons)) else None


def wrapper_bound(source: bytes, guard: Node, i: str) -> str | None:
    cond = text(source, guard.child_by_field_name("condition")).strip()
    cond = cond[1:-1].strip() if cond.startswith("(") and cond.endswith(")") else cond
    m = re.fullmatch(rf"{i}\s*<\s*([^<>=&|?]+)", cond) or re.fullmatch(rf"([^<>=&|?]+?)\s*>\s*{i}", cond)
    return m.group(1).strip() if m else None
