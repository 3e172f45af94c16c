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
from .textsplit import split_top_level

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


def expand_macro_calls(text: str, macros: dict[str, Macro], rounds: int = 8) -> str:
    """`text` with each call of one of `macros` replaced by its body (arguments substituted, parenthesized), for
    analysis only: `SET(out, i, v)` -> `(out)[(i)] = (v)`. A macro is not expanded again inside its own expansion
    (`#define F(I, J) F[(I) * N + (J)]`); `#` and `##` are left as written; unbalanced calls are left alone."""
    if not macros:
        return text
    call = re.compile(r"(?<![\w.>])(" + "|".join(map(re.escape, sorted(macros, key=len, reverse=True))) + r")\s*\(")
    for _ in range(rounds):
        out, pos, changed = [], 0, False
        for m in call.finditer(text):
            if m.start() < pos:
                continue
            end = _closing(text, m.end() - 1)
            macro = macros[m.group(1)]
            args = split_top_level(text[m.end(): end]) if end >= 0 else None
            if args is None or len(args) != len(macro.params):
                continue
            body = macro.body
            if macro.params:
                table = dict(zip(macro.params, args))
                body = re.sub(r"\b(" + "|".join(map(re.escape, macro.params)) + r")\b",
                              lambda a, t=table: f"({t[a.group(1)]})", body)  # type: ignore[misc]
            body = re.sub(r"(?<![\w.>])" + re.escape(m.group(1)) + r"(?=\s*\()", m.group(1) + "_", body)  # no recursion
            statement = ";" in body or re.match(r"\s*(?:(?:do|if|for|while|switch)\b|\{)", body) is not None
            out.append(text[pos: m.start()] + (body if statement else "(" + body + ")"))
            pos = end + 1
            changed = True
        text = "".join(out) + text[pos:]
        if not changed:
            break
    return text


def _closing(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i if c == ")" else -1
    return -1

