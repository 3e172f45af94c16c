"""The names of a row walk (passes/reductions/_row_loops.py, passes/reductions/_row_walks.py): declarations, sums that enter their loop at
zero, selections (max / min by a call, a conditional expression or an `if`), pointers to the row, and names that move
with a loop around the row loops."""
from __future__ import annotations

import re

from tree_sitter import Node

from s2s.lang.kernel_facts import idents

from ..common.tree import text, walk

_SELECT_CALLS = frozenset({"max", "min", "fmax", "fmin", "fmaxf", "fminf", "::max", "::min", "std::max", "std::min"})
_COMPARE = frozenset({"<", ">", "<=", ">="})
COUNT_UP = re.compile(r"^\s*(\+\+\s*(\w+)|(\w+)\s*\+\+|(\w+)\s*\+=\s*1)\s*$")  # ++j, j++, j += 1


def strip(node: Node | None) -> Node | None:
    while node is not None and node.type in {"parenthesized_expression", "condition_clause"} and node.named_children:
        node = node.named_children[-1]
    return node


def select(source: bytes, acc: str, right: Node) -> str | None:
    """`e` when `right` picks one of acc and e by a comparison or a max/min call, else None."""
    right = strip(right) or right
    if right.type == "call_expression":
        args = right.child_by_field_name("arguments")
        fn = text(source, right.child_by_field_name("function")).replace(" ", "")
        xs = [text(source, a) for a in args.named_children] if args is not None else []
        if fn in _SELECT_CALLS and len(xs) == 2 and acc in xs and xs.count(acc) == 1:
            other = xs[1 - xs.index(acc)]
            return other if acc not in idents(other) else None
        return None
    if right.type == "conditional_expression":
        cond = strip(right.child_by_field_name("condition"))
        picks = {text(source, right.child_by_field_name("consequence")), text(source, right.child_by_field_name("alternative"))}
        return compared(source, acc, cond, picks)
    return None


def compared(source: bytes, acc: str, cond: Node | None, picks: set[str]) -> str | None:
    if cond is None or cond.type != "binary_expression" or text(source, cond.child_by_field_name("operator")) not in _COMPARE:
        return None
    sides = {text(source, strip(cond.child_by_field_name("left"))), text(source, strip(cond.child_by_field_name("right")))}
    picks = {p.strip("() ") for p in picks}
    if acc not in sides or sides != picks or len(sides) != 2:
        return None
    other = next(s for s in sides if s != acc)
    return other if acc not in idents(other) else None


def declares(source: bytes, stmt: Node, name: str) -> bool:
    if stmt.type != "declaration":
        return False
    return any(d.type in {"init_declarator", "identifier"} and text(source, d.child_by_field_name("declarator") or d) == name
               for d in stmt.children_by_field_name("declarator"))


_ZERO = re.compile(r"^\(?\s*0+(?:\.0*)?[fFlLuU]?\s*\)?$|^\(?\s*0*\.0+[fFlL]?\s*\)?$")  # 0, 0.0f, 0., .0f


def starts_at_zero(source: bytes, before: list[Node], name: str) -> bool:
    """Whether the sum `name` enters its loop at zero: declared `= 0` (0.0f, 0.), not assigned before the loop."""
    value = re.search(rf"\b{re.escape(name)}\s*=\s*([^,;]+)", text(source, decl)) \
        if (decl := next((s for s in before if declares(source, s, name)), None)) is not None else None
    return value is not None and bool(_ZERO.match(value.group(1))) and not any(
        re.search(rf"\b{re.escape(name)}\s*(?:[-+*/]?=[^=]|\+\+|--)", text(source, s)) for s in before if s.start_byte > decl.start_byte)  # type: ignore[union-attr]


def row_pointers(source: bytes, stmts: list[Node], row: set[str]) -> set[str]:
    """Pointers to the row: locals declared from it (`const float* in = x + r * n;`, `&y[r * n]`) and pointers
    moved to it (`x += r * n;`, `x = x + r * n;`)."""
    out: set[str] = set()
    for s in stmts:
        if s.type == "declaration":
            for d in s.children_by_field_name("declarator"):
                value, name = d.child_by_field_name("value"), d.child_by_field_name("declarator")
                if d.type == "init_declarator" and value is not None and name is not None and name.type == "pointer_declarator" \
                        and (row | out) & idents(text(source, value)):
                    out.add(text(source, name).lstrip("* ").split()[-1])
        e = s.named_children[0] if s.type == "expression_statement" and s.named_children else None
        if e is not None and e.type == "assignment_expression":
            left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
            if left is not None and left.type == "identifier" and right is not None and (row | out) & idents(text(source, right)):
                out.add(text(source, left))
    return out


def moving(source: bytes, holders: list[Node], inside: list[Node], outer_vars: set[str]) -> set[str]:
    """The outer loops' variables and the names computed from them outside the row loops (a cell's start from its
    neighbour offset): a row loop reading them walks another stretch on each trip of the loop around it."""
    pairs: list[tuple[str, str]] = []
    for h in holders:
        for n in walk(h, lambda m: m not in inside):
            if n.type == "init_declarator" or n.type == "assignment_expression":
                name = n.child_by_field_name("declarator") if n.type == "init_declarator" else n.child_by_field_name("left")
                value = n.child_by_field_name("value") if n.type == "init_declarator" else n.child_by_field_name("right")
                if name is not None and name.type == "identifier" and value is not None:
                    pairs.append((text(source, name), text(source, value)))
    out = set(outer_vars)
    for _ in range(len(pairs)):
        grown = {name for name, value in pairs if out & idents(value)} - out
        if not grown:
            break
        out |= grown
    return out
