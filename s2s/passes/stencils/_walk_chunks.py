"""walk-registers{chunks=N}: the walked loop's range [lo, hi) split over gridDim.z, each block along z walking one N-th.

`zlo = lo + blockIdx.z * (hi - lo) / N` and `zhi = lo + (blockIdx.z + 1) * (hi - lo) / N` in 64-bit (an empty range stays
empty): the chunks tile [lo, hi) with no step twice. Valid when the steps are independent: the loop is a statement of the
kernel's body (not nested), every array it writes moves by a nonzero whole step each step (no two steps write one
element), no name it assigns lives across steps (the walk's registers excepted: a chunk's first step loads them afresh),
its bounds read no name it assigns, no array, no call, and nothing outside it writes memory (that code runs N times).
"""
from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

from s2s.lang.edits import Edit, Refused
from s2s.lang.kernel_facts import KernelFacts, Loop, idents
from s2s.lang.parsing import src

from ..common.index_steps import diff, offset, whole
from ..common.statements import assigned, declares
from ..common.tree import fresh, indent_of, walk
from ._stencil import builtin

_Z = re.compile(r"\b(?:blockIdx|gridDim|threadIdx|blockDim)\.z\b|\bget_(?:group_id|num_groups|global_id|local_id|global_size"
                r"|local_size|global_offset)\s*\(\s*2\s*\)|__cluster|\batomic\w*\s*\(")
_BOUND = re.compile(r"\s*(\w+)\s*(<=?)\s*(.+?)\s*")


def chunk_edits(source: bytes, facts: KernelFacts, lp: Loop, node: Node, body: Node, stmts: list[Node],
                expand: Callable[[str], str], envs: list[dict[str, int]], chunks: int, dialect: str) -> tuple[str, list[Edit]] | Refused:
    """The declarations to put before `node` (the walked `for`) and the edits of its header that make it walk only
    this block's chunk of its range."""
    kernel_text = source[facts.body_start:facts.body_end].decode("utf-8", "replace")
    if _Z.search(kernel_text):
        return Refused("the kernel reads the z of the grid, block or thread, a cluster or an atomic: z is not free for chunks")
    if lp.depth != 1 or node.parent is None or node.parent.start_byte != facts.body_start:
        return Refused(f"the loop over `{lp.var}` is nested: chunks split a loop of the kernel's body")
    inner = src(source, body)
    declared = {declares(source, s) for s in stmts if s.type == "declaration"} - {""}
    carried = sorted(a for a in idents(inner) if assigned(a, inner) and a not in declared and a != lp.var)
    if carried:
        return Refused(f"`{carried[0]}` is assigned in the loop over `{lp.var}` and lives across its steps")
    init = node.child_by_field_name("initializer")
    cond = node.child_by_field_name("condition")
    m = _BOUND.fullmatch(lp.cond)
    if init is None or cond is None or init.type != "declaration" or declares(source, init) != lp.var or m is None \
            or m.group(1) != lp.var:
        return Refused(f"chunks need `for (int {lp.var} = LO; {lp.var} < HI; ...)`")
    value = init.named_children[-1].child_by_field_name("value")
    if value is None:
        return Refused(f"`{lp.var}` has no initial value")
    lo, hi = src(source, value), m.group(3)
    if m.group(2) == "<=":
        hi = f"({hi}) + 1"
    for b in (lo, hi):
        if "[" in b or re.search(r"\w\s*\(", b) or idents(b) & ({lp.var} | {a for a in idents(inner) if assigned(a, inner)}):
            return Refused(f"the bound `{b}` of the loop over `{lp.var}` is not invariant (reads an array, a call or a name the loop assigns)")
    for s in walk(node):
        if s.type != "subscript_expression" or s.parent is None:
            continue
        left = s.parent.type in {"assignment_expression", "update_expression"} and (
            s.parent.child_by_field_name("left") == s or s.parent.child_by_field_name("argument") == s)
        if not left:
            continue
        idx = s.child_by_field_name("indices")
        e = src(source, idx).strip()[1:-1] if idx is not None else ""
        ex = expand(e)
        steps = [diff(ex, lp.var, {**{n: 13 + 7 * k for k, n in enumerate(sorted(idents(ex)))}, **env}) for env in envs]
        if any(not st for st in steps):
            return Refused(f"the write `{src(source, s)}` does not move by a whole nonzero step of `{lp.var}`: steps may share it")
    before = source[facts.body_start:node.start_byte].decode("utf-8", "replace")
    after = source[node.end_byte:facts.body_end].decode("utf-8", "replace")
    if re.search(r"\]\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--", re.sub(r"\bfor\s*\(.*?\)", "", before + after)):
        return Refused("the kernel writes memory outside the walked loop: that code would run once a chunk")
    wl, wh = fresh(facts, source, f"{lp.var}lo"), fresh(facts, source, f"{lp.var}hi")
    chunk = f"(long long){builtin(dialect, 'blockIdx', 'z')}"
    ind = indent_of(source, node.start_byte)
    span = f"(({hi}) > ({lo}) ? (long long)({hi}) - (long long)({lo}) : 0LL)"
    head = (f"const int {wl} = (int)((long long)({lo}) + {chunk} * {span} / {chunks});\n{ind}"
            f"const int {wh} = (int)((long long)({lo}) + ({chunk} + 1) * {span} / {chunks});\n{ind}")
    return head, [Edit(value.start_byte, value.end_byte, wl), Edit(cond.start_byte, cond.end_byte, f"{lp.var} < {wh}")]


def step_columns(reads: list[tuple[Node, str, str, int]], var: str, expand: Callable[[str], str],
                 envs: list[dict[str, int]]) -> dict[str, dict[int, list[tuple[Node, str, int]]]]:
    """Per read array: its reads by offset in whole steps of `var` from the first read (those at a constant whole-step
    offset only), where two or more offsets are found."""
    by_array: dict[str, list[tuple[Node, str, int]]] = {}
    for sub, arr, e, k in reads:
        by_array.setdefault(arr, []).append((sub, e, k))
    columns: dict[str, dict[int, list[tuple[Node, str, int]]]] = {}
    for arr, items in by_array.items():
        base = expand(items[0][1])
        steps = [diff(base, var, env) for env in envs]
        if any(not st for st in steps):
            continue
        col: dict[int, list[tuple[Node, str, int]]] = {}
        for sub, e, k in items:
            offs = {whole(offset(expand(e), base, env), st) for env, st in zip(envs, steps)}
            if len(offs) == 1 and None not in offs:
                off = offs.pop()
                assert off is not None
                col.setdefault(off, []).append((sub, e, k))
        if len(col) >= 2:
            columns[arr] = col
    return columns
