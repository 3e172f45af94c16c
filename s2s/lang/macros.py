"""Function-like macros of a kernel file, expanded for analysis only: `AT(k, i)` read as `A[(k) * M + (i)]`.

Real codes index through macros (`#define IDX2C(i, j, ld) (((j) * (ld)) + (i))`); tree-sitter sees a call. The kernel
model expands a call to a macro defined in the file (its arguments substituted, parenthesized) into a parsed
expression of its own, so that the access and its affine index are seen; the kernel's text is never changed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node, Tree

from .parsing import parse, src

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)[ \t]*((?:[^\n\\]|\\\n|\\.)*)$", re.M)
_PREFIX = b"void __s2s_macro(void) { "


@dataclass(frozen=True)
class Macro:
    params: tuple[str, ...]
    body: str


@dataclass(frozen=True)
class Expansion:
    data: bytes  # the wrapper source the node indexes into
    node: Node  # the expression, parentheses stripped
    tree: Tree  # kept alive with its node


def function_macros(data: bytes) -> dict[str, Macro]:
    text = data.decode("utf-8", "replace")
    return {m.group(1): Macro(tuple(p.strip() for p in m.group(2).split(",") if p.strip()), m.group(3).replace("\\\n", " ").strip())
            for m in _DEFINE.finditer(text)}


def expand(node: Node, data: bytes, macros: dict[str, Macro], cache: dict[str, Expansion | None]) -> Expansion | None:
    """The expansion of a call to one of `macros`, parsed; None when `node` is no such call or it does not parse."""
    if node.type != "call_expression" or not macros:
        return None
    fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
    name = src(data, fn) if fn is not None else ""
    macro = macros.get(name)
    values = [src(data, a) for a in args.named_children if a.type != "comment"] if args is not None else []
    if macro is None or len(values) != len(macro.params):
        return None
    body = macro.body
    if macro.params:
        table = dict(zip(macro.params, values))
        body = re.sub(r"\b(" + "|".join(map(re.escape, macro.params)) + r")\b", lambda m: f"({table[m.group(1)]})", body)
    if body in cache:
        return cache[body]
    wrapped = _PREFIX + body.encode() + b"; }"
    tree = parse(wrapped, "cuda")
    found: Expansion | None = None
    if not tree.root_node.has_error:
        stmt = tree.root_node.descendant_for_byte_range(len(_PREFIX), len(_PREFIX) + len(body.encode()))
        while stmt is not None and stmt.type != "expression_statement":
            stmt = stmt.parent
        expr = stmt.named_children[0] if stmt is not None and stmt.named_children else None
        while expr is not None and expr.type == "parenthesized_expression" and len(expr.named_children) == 1:
            expr = expr.named_children[0]
        found = Expansion(wrapped, expr, tree) if expr is not None else None
    cache[body] = found
    return found
