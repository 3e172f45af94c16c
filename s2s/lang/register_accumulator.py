"""Accumulation into memory inside a loop, rewritten to a register accumulator: the canonical form reductions match.

`out[e] += f(j)` (or `-=`, `*=`, `out[e] = out[e] + f(j)`) inside a loop that `e` does not depend on, where nothing
else in the loop touches `out`, becomes `T acc = out[e]; for (...) acc += f(j); out[e] = acc;`. When the statement
just before the loop stores `out[e] = v;`, the register starts from `v` instead (`T acc = v;`) and that store goes:
the final store writes the same element. The register has the element's own type and takes the same additions in
the same order, so the result is bit-identical (the stores in between were never read back by this thread).
"""
from __future__ import annotations

import re

from tree_sitter import Node

from .edits import Edit, indent_of
from .kernel_facts import Accumulation, KernelFacts, fresh
from .parsing import parse, src

_LEAVES = re.compile(r"\b(return|goto|__syncthreads|__syncwarp|barrier|work_group_barrier|__threadfence\w*|mem_fence|atomic\w*|atom_\w+)\b")


def _flat(text: str) -> str:
    return re.sub(r"\s+", "", text)


def accumulator_edits(source: bytes, facts: KernelFacts) -> tuple[tuple[Edit, ...], str] | str:
    """The edits that move the first accumulation that qualifies into a register, and a note; or why none qualifies
    (the first accumulation's reason)."""
    if not facts.accumulations:
        return "no accumulation into a global array at a loop-invariant index inside a loop"
    reasons = []
    for acc in facts.accumulations:
        got = _one(source, facts, acc)
        if not isinstance(got, str):
            return got
        reasons.append(got)
    return reasons[0]


def _one(source: bytes, facts: KernelFacts, acc: Accumulation) -> tuple[tuple[Edit, ...], str] | str:
    loop = facts.loops[acc.loop]
    inside = [s for s in facts.subscripts if loop.start <= s.start and s.end <= loop.end]
    mine = [s for s in inside if s.array == acc.array and _flat(s.index) == _flat(acc.index)]
    if any(s.array == acc.array and s not in mine for s in inside):
        return f"{acc.array} is also accessed at other indices inside the loop"
    target = facts.param(acc.array)
    assert target is not None
    for s in inside:
        other = facts.param(s.array)
        if s.write and other is not None and other.name != acc.array and other.base_type == target.base_type \
                and not (other.restrict and target.restrict):
            return f"{other.name} is written in the loop and may alias {acc.array}"
    body = source[loop.start : loop.end].decode("utf-8", "replace")
    if _LEAVES.search(body):
        return "the loop can leave the kernel early or synchronise with other threads (return, goto, barriers, atomics)"
    if len(re.findall(rf"\b{re.escape(acc.array)}\b", body)) != len(mine):
        return f"{acc.array} is used in the loop other than through {acc.array}[{acc.index}]"
    node = _node(source, facts, loop.start, loop.end, loop.kind)
    if node is None or node.parent is None or node.parent.type != "compound_statement":
        return "the loop is not a statement of a block (no place for the register's declaration)"
    start = loop.start
    prev = _before(node)
    if prev is not None and prev.type == "preproc_call":  # keep `#pragma unroll` next to its loop
        start, prev = prev.start_byte, _before(prev)
    name = fresh(facts, source, "acc")
    pad = indent_of(source, start)
    ref = f"{acc.array}[{acc.index}]"
    first = _first_value(source, prev, acc)
    if first is not None:
        edits = [Edit(prev.start_byte, prev.end_byte, f"{target.base_type} {name} = {first};")]  # type: ignore[union-attr]
    else:
        edits = [Edit(start, start, f"{target.base_type} {name} = {ref};\n{pad}")]
    edits += [Edit(s.start, s.end, name) for s in mine]
    edits.append(Edit(loop.end, loop.end, f"\n{pad}{ref} = {name};"))
    return tuple(edits), f"accumulate {ref} in register {name}" + (" from its first value" if first is not None else "")


def _first_value(source: bytes, prev: Node | None, acc: Accumulation) -> str | None:
    """v of `out[e] = v;` when that is the statement just before the loop (the register starts from it)."""
    if prev is None or prev.type != "expression_statement" or not prev.named_children:
        return None
    a = prev.named_children[0]
    left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
    op = a.child_by_field_name("operator")
    if a.type != "assignment_expression" or left is None or right is None or op is None or src(source, op) != "=":
        return None
    if left.type != "subscript_expression" or _flat(src(source, left)) != _flat(f"{acc.array}[{acc.index}]"):
        return None
    return src(source, right)


def _before(node: Node) -> Node | None:
    prev = node.prev_named_sibling
    while prev is not None and prev.type == "comment":
        prev = prev.prev_named_sibling
    return prev


def _node(source: bytes, facts: KernelFacts, start: int, end: int, kind: str) -> Node | None:
    node = parse(source, facts.dialect).root_node.descendant_for_byte_range(start, end)
    while node is not None and not (node.type == kind and node.start_byte == start and node.end_byte == end):
        node = node.parent
    return node


