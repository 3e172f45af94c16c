"""The loop kinds of an elementwise kernel: a grid-stride loop `for (int i = GID; i < E; i += gridDim.x * blockDim.x)`
and a block-stride loop `for (int i = threadIdx.x; i < E; i += blockDim.x)` (a block walks its own row: `x[row + i]`
with `row = blockIdx.x * width`), `i = i + STRIDE` alike, after declarations whose values are the same for every
element of the loop. Those names (and the scalar parameters the kernel does not write) may form an offset
`P[i + OFF]`: the words of the vector rewrite start at `P + OFF`, checked for alignment once for all the threads that
share the loop (the grid, or the block's row). A block-stride loop's declarations may read the block's indices, a
grid-stride loop's no thread or block index."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tree_sitter import Node

from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.parsing import src

_START = {"cuda": {"grid": r"(?:blockIdx\.x\*blockDim\.x|blockDim\.x\*blockIdx\.x)\+threadIdx\.x|threadIdx\.x\+(?:blockIdx\.x\*blockDim\.x|"
                           r"blockDim\.x\*blockIdx\.x)", "block": r"threadIdx\.x"},
          "opencl": {"grid": r"get_global_id0", "block": r"get_local_id0"}}
_STEP = {"cuda": {"grid": r"blockDim\.x\*gridDim\.x|gridDim\.x\*blockDim\.x", "block": r"blockDim\.x"},
         "opencl": {"grid": r"get_global_size0", "block": r"get_local_size0"}}
_THREAD = {"grid": re.compile(r"\b(?:threadIdx|blockIdx|get_local_id|get_group_id|get_global_id)\b"),
           "block": re.compile(r"\b(?:threadIdx|get_local_id|get_global_id)\b")}


def _flat(text: str) -> str:
    return re.sub(r"\s+|[()]", "", text)


def stride_loop(source: bytes, facts: KernelFacts, stmts: list[Node], declared: Callable[..., Any], bound_of: Callable[..., Any],
                finish: Callable[..., Any]) -> Any:
    """The shape of `DECLARATIONS...; for (...) S` (through `finish`), or why it is none."""
    loop = stmts[-1]
    init, cond, upd, body = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update", "body"))
    d = declared(source, init) if init is not None and init.type == "declaration" else None
    starts, steps = _START.get(facts.dialect, _START["cuda"]), _STEP.get(facts.dialect, _STEP["cuda"])
    start = _flat(src(source, d[2])) if d is not None and d[2] is not None else ""
    kind = next((k for k, rx in starts.items() if re.fullmatch(rx, start)), "")
    if d is None or not kind:
        return "the loop's index does not start at the global thread index (or the thread's index in its block)"
    upd_text = _flat(src(source, upd)) if upd is not None else ""
    m = re.fullmatch(rf"{d[1]}\+=(.+)|{d[1]}={d[1]}\+(.+)", upd_text)
    step = (m.group(1) or m.group(2)) if m else ""
    if not re.fullmatch(steps[kind], step):
        return "the loop does not step by the grid's thread count" if kind == "grid" else "the loop does not step by the block's size"
    bound = bound_of(source, cond, d[1])
    if bound is None or body is None:
        return f"the loop's condition is not `{d[1]} < BOUND`"
    uniform = _uniform(source, facts, stmts[:-1], kind)
    if isinstance(uniform, str):
        return uniform
    inside = src(source, body)  # a name the loop assigns is not the same for all its elements
    uniform = frozenset(n for n in uniform if not re.search(rf"(?:\+\+|--)\s*{n}\b|\b{n}\s*(?:\+\+|--|[-+*/%&|^]?=(?!=))", inside))
    right = upd.child_by_field_name("right") if upd is not None and upd.type == "assignment_expression" else None
    op = upd.child_by_field_name("operator") if upd is not None else None
    if right is not None and right.type == "binary_expression" and op is not None and src(source, op) == "=":
        right = right.child_by_field_name("right")  # `i = i + STRIDE`: the stride is the sum's right operand
    step_text = src(source, right) if right is not None else step
    return finish(source, facts, "stride" if kind == "grid" else "rows", d, bound, step_text, loop, body, uniform=uniform)


def _uniform(source: bytes, facts: KernelFacts, decls: list[Node], kind: str) -> frozenset[str] | str:
    """The names whose value every element of the loop shares: scalar parameters the kernel does not write and the
    locals declared before the loop from them (a block-stride loop's from the block's indices too)."""
    names = {p.name for p in facts.params if not p.pointer and not p.written}
    for decl in decls:
        if decl.type == "comment":
            continue
        for item in decl.named_children:
            if item.type != "init_declarator":
                continue
            name, value = item.child_by_field_name("declarator"), item.child_by_field_name("value")
            if name is None or value is None or name.type != "identifier":
                continue
            words = set(re.findall(r"[A-Za-z_]\w*", src(source, value)))
            if not _THREAD[kind].search(src(source, value)) and words - {"blockIdx", "blockDim", "gridDim", "x", "y", "z"} <= names:
                names.add(src(source, name))
    return frozenset(names)
