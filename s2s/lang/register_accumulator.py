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
from .kernel_facts import Accumulation, KernelFacts, ParamFact, fresh
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
    node = _node(source, facts, loop.start, loop.end, loop.kind)
    if node is None:
        return "the loop was not found again in the kernel's syntax tree"
    ref = acc.ref or f"{acc.array}[{acc.index}]"
    elements = [e for e in _elements(node) if src(source, e[0]) == acc.array]
    mine = [e for _root, e in elements if _flat(src(source, e)) == _flat(ref)]
    if len(mine) != len(elements):
        return f"{acc.array} is also accessed at other indices inside the loop"
    target = facts.param(acc.array)
    assert target is not None
    why = _aliasing_store(source, facts, node, acc.array, target)
    if why:
        return why
    body = source[loop.start : loop.end].decode("utf-8", "replace")
    if _LEAVES.search(body):
        return "the loop can leave the kernel early or synchronise with other threads (return, goto, barriers, atomics)"
    if len(re.findall(rf"\b{re.escape(acc.array)}\b", body)) != len(mine):
        return f"{acc.array} is used in the loop other than through {ref}"
    if node.parent is None or node.parent.type != "compound_statement":
        return "the loop is not a statement of a block (no place for the register's declaration)"
    start = loop.start
    prev = _before(node)
    if prev is not None and prev.type == "preproc_call":  # keep `#pragma unroll` next to its loop
        start, prev = prev.start_byte, _before(prev)
    name = fresh(facts, source, "acc")
    pad = indent_of(source, start)
    first = _first_value(source, prev, ref)
    if first is not None:
        edits = [Edit(prev.start_byte, prev.end_byte, f"{target.base_type} {name} = {first};")]  # type: ignore[union-attr]
    else:
        edits = [Edit(start, start, f"{target.base_type} {name} = {ref};\n{pad}")]
    if acc.form in _COMPOUND:  # `out[e] = x + out[e]` -> `acc += x`: the same operation (IEEE addition commutes exactly)
        statement = source[acc.start : acc.end].decode("utf-8", "replace")
        edits.append(Edit(acc.start, acc.end, f"{name} {_COMPOUND[acc.form]} {acc.expr};" if statement.rstrip().endswith(";")
                          else f"{name} {_COMPOUND[acc.form]} {acc.expr}"))
        mine = [e for e in mine if not (acc.start <= e.start_byte and e.end_byte <= acc.end)]
    edits += [Edit(e.start_byte, e.end_byte, name) for e in mine]
    edits.append(Edit(loop.end, loop.end, f"\n{pad}{ref} = {name};"))
    return tuple(edits), f"accumulate {ref} in register {name}" + (" from its first value" if first is not None else "")


_COMPOUND = {"= x +": "+=", "= + x": "+=", "= x -": "-="}
_STORES = {"assignment_expression": "left", "update_expression": "argument"}


def _elements(node: Node) -> list[tuple[Node, Node]]:
    """(array, element) of every outermost subscript `a[i]`, `a[i][j]` under `node` whose array is a name."""
    out: list[tuple[Node, Node]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "subscript_expression" and not (n.parent is not None and n.parent.type == "subscript_expression"
                                                     and n.parent.child_by_field_name("argument") == n):
            root = _root(n)
            if root is not None:
                out.append((root, n))
        stack.extend(n.named_children)
    return out


def _root(n: Node) -> Node | None:
    while n.type == "subscript_expression":
        arg = n.child_by_field_name("argument")
        if arg is None:
            return None
        n = arg
    return n if n.type == "identifier" else None


def _aliasing_store(source: bytes, facts: KernelFacts, loop: Node, array: str, target: ParamFact) -> str:
    """Why a store in the loop may write the accumulated element behind the register's back; "" when none can: the
    only stores are to the element itself, to local or shared arrays of the kernel, to buffers of another element
    type, or to buffers that are `restrict` like the target."""
    stack = [loop]
    while stack:
        n = stack.pop()
        stack.extend(n.named_children)
        field = _STORES.get(n.type)
        place = n.child_by_field_name(field) if field else None
        if place is None or place.type == "identifier":
            continue
        root = _root(place) if place.type == "subscript_expression" else None
        if root is None:
            if place.type == "field_expression" and "->" not in src(source, place):
                continue  # a member of a local struct
            return f"the loop stores through {src(source, place)}, which may alias {array}"
        name = src(source, root)
        other = facts.param(name)
        if name == array:
            continue
        if other is None:
            if _declared_pointer(source, facts, name):
                return f"the loop stores through pointer {name}, which may alias {array}"
            continue
        if other.pointer and other.base_type == target.base_type and not (other.restrict and target.restrict):
            return f"{other.name} is written in the loop and may alias {array}"
    return ""


def _declared_pointer(source: bytes, facts: KernelFacts, name: str) -> bool:
    """Whether the kernel declares `name` as a pointer (`T* p = ...`): an array of its own (`T buf[8]`, `__shared__`)
    is not."""
    body = source[facts.body_start : facts.body_end].decode("utf-8", "replace")
    return bool(re.search(rf"\*\s*(?:const\s+|__restrict__\s+|restrict\s+)*{re.escape(name)}\s*[=;,)]", body))


def _first_value(source: bytes, prev: Node | None, ref: str) -> str | None:
    """v of `out[e] = v;` when that is the statement just before the loop (the register starts from it)."""
    if prev is None or prev.type != "expression_statement" or not prev.named_children:
        return None
    a = prev.named_children[0]
    left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
    op = a.child_by_field_name("operator")
    if a.type != "assignment_expression" or left is None or right is None or op is None or src(source, op) != "=":
        return None
    if left.type != "subscript_expression" or _flat(src(source, left)) != _flat(ref):
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


