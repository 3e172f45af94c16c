"""The subscripts of an elementwise kernel's element code: each pointer read or written at the element's own index
(`x[i]`, `X(i)` through a macro, `x[i + OFF]` with OFF the same for every element of a loop), or gathered from a
read-only pointer elsewhere (`g[i % D]`, `w[0]`)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.macros import expand, function_macros
from s2s.lang.parsing import src

from ..common.tree import text, walk
from ._element_code import conditional, element_node
from ._element_index import is_own_index, steps_with, unit_offset

OBJ_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]+?)[ \t]*$", re.M)


@dataclass(frozen=True)
class Access:
    start: int
    end: int
    array: str
    load_needed: bool  # False only for `P[i] = ...;` as a statement of its own that every element runs
    written: bool  # the target of an assignment or ++/-- (through a macro too, which the facts' roles miss)
    gather: bool = False  # a read of a read-only pointer at an index other than `i`: left in each element's code
    offset: str = ""  # `P[i + OFF]` in a loop whose OFF is the same for all its elements: OFF ("" for `P[i]`)


def accesses(source: bytes, facts: KernelFacts, nodes: list[Node], var: str, uniform: frozenset[str] | None = None) -> list[Access] | str:
    """Every subscript of a pointer parameter in the element's code `nodes`, or why the code is not elementwise in `var`.
    With `uniform` (the names that hold one value for every element of a thread's loop), `P[var + OFF]` counts as the
    element's own with the offset OFF, an expression of those names."""
    macros = function_macros(source)
    objects = {m.group(1): m.group(2) for m in OBJ_MACRO.finditer(source.decode("utf-8", "replace"))}
    pointers = {p.name for p in facts.params if p.pointer}
    written_params = {p.name for p in facts.params if p.pointer and p.written}
    declared: set[str] = set()
    found: list[Access] = []
    covered: list[tuple[int, int]] = []
    for top in nodes:
        for n in walk(top):
            why = element_node(source, n, declared, selects=True)
            if why:
                return why
            array, index = subscript(source, n, macros, pointers)
            if array is None:
                continue
            parent = n.parent  # a write: the left side of an assignment, or ++/--
            is_write = parent is not None and (parent.type == "update_expression" or (
                parent.type == "assignment_expression" and parent.child_by_field_name("left") == n))
            own = is_own_index(index, var, objects)
            offset = unit_offset(index, var, objects, uniform) if not own and uniform is not None else ""
            gather = not own and not offset
            if gather and (is_write or array in written_params or steps_with(index, var)):
                return f"`{src(source, n)}` is not {array}[{var}]"
            write_only = (is_write and parent is not None and parent.type == "assignment_expression"
                          and text(source, parent.child_by_field_name("operator")) == "="
                          and parent.parent is not None and parent.parent.type == "expression_statement"
                          and not conditional(n, top))  # a store some elements skip: the word stores what they held
            found.append(Access(n.start_byte, n.end_byte, array, not write_only, bool(is_write), gather, offset))
            covered.append((n.start_byte, n.end_byte))
        for n in walk(top):
            if n.type == "identifier" and src(source, n) in pointers and not any(s <= n.start_byte < e for s, e in covered):
                return f"`{src(source, n)}` is used other than as {src(source, n)}[{var}]"
    if not found:
        return "no pointer parameter is subscripted"
    written = {a.array for a in found if a.written}
    clash = next((a for a in found if a.gather and a.array in written), None)
    if clash is not None:  # read elsewhere than at i and written: elements would depend on each other
        return f"`{src(source, _node_at(nodes, clash))}` is not {clash.array}[{var}]"
    offsets = {(a.array, re.sub(r"\s+", "", a.offset)) for a in found if not a.gather}
    if len(offsets) != len({arr for arr, _ in offsets}):
        return "an array is read or written at two different offsets from the element's index"
    needed = {a.array for a in found if a.load_needed}
    return [Access(a.start, a.end, a.array, a.array in needed, a.written, a.gather, a.offset) for a in found]


def _node_at(nodes: list[Node], a: Access) -> Node:
    """The subscript node of access `a`."""
    for top in nodes:
        for n in walk(top):
            if n.start_byte == a.start and n.end_byte == a.end:
                return n
    return nodes[0]


def subscript(source: bytes, n: Node, macros: dict, pointers: set[str]) -> tuple[str | None, str]:
    """(array, index text) of `P[index]` or of a macro call expanding to it, P a pointer parameter; (None, "") else."""
    exp = expand(n, source, macros, {}) if n.type == "call_expression" else None
    data, node = (exp.data, exp.node) if exp is not None else (source, n)
    arr, idx = node.child_by_field_name("argument"), node.child_by_field_name("indices")
    if node.type != "subscript_expression" or arr is None or idx is None or src(data, arr) not in pointers:
        return None, ""
    return src(data, arr), src(data, idx).strip("[]")
