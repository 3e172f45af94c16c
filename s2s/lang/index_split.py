"""A flat thread index split by `/` and `%` into a mixed-radix numbering of the outputs (what delinearize-2d reads).

`i = t / N; j = t % N` numbers the outputs row by row; `b = t / (M*N); r = (t / N) % M; c = t % N` adds a batch. Each
declaration is one digit `(t / D) % E` (D = 1 or E absent allowed); the digits form a numbering when, from the
unit-stride one up, every divisor is the product of the moduli below it. Sizes are polynomials over kernel parameters
and object-like macros of the kernel file with integer values (compile-time sizes).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from .affine import Poly, poly_of
from .edits import Edit
from .parsing import descendants, parse
from .parsing import src as _src


def src(source: bytes, node: Node | None) -> str:
    return _src(source, node) if node is not None else ""


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]+)$", re.M)


@dataclass(frozen=True)
class Digit:
    var: str
    div: Poly
    mod: Poly | None
    decl: Node  # its declaration statement


def t_bound(source: bytes, term: Node, t: str, negated: bool) -> Poly | None:
    """G of a guard term `t < G` (`t >= G` in an early exit), exclusive; None for any other use of t."""
    if term.type != "binary_expression":
        return None
    op = src(source, term.child_by_field_name("operator"))
    left, right = strip(term.child_by_field_name("left")), strip(term.child_by_field_name("right"))
    if right is not None and right.type == "identifier" and src(source, right) == t:
        left, right, op = right, left, {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, "")
    if left is None or left.type != "identifier" or src(source, left) != t:
        return None
    g = poly_of(right, source)
    one = Poly.const(1)
    table = {"<": g, "<=": g + one if g is not None else None} if not negated else {">=": g, ">": g + one if g is not None else None}
    return table.get(op)


def digit_of(source: bytes, s: Node, t: str) -> Digit | None:
    """`int v = t / D;`, `t % E` or `(t / D) % E` (D, E polynomials): one digit of t's mixed-radix numbering."""
    decls = s.children_by_field_name("declarator") if s.type == "declaration" else []
    if len(decls) != 1 or decls[0].type != "init_declarator":
        return None
    var, value = decls[0].child_by_field_name("declarator"), strip(decls[0].child_by_field_name("value"))
    if var is None or var.type != "identifier" or value is None or value.type != "binary_expression":
        return None
    op = src(source, value.child_by_field_name("operator"))
    left, right = strip(value.child_by_field_name("left")), poly_of(value.child_by_field_name("right"), source)
    if right is None or left is None or op not in {"/", "%"}:
        return None
    if left.type == "identifier" and src(source, left) == t:
        return Digit(src(source, var), right, None, s) if op == "/" else Digit(src(source, var), Poly.const(1), right, s)
    inner = _digit_expr(source, left, t)
    return Digit(src(source, var), inner, right, s) if op == "%" and inner is not None else None


def _digit_expr(source: bytes, node: Node, t: str) -> Poly | None:
    if node.type != "binary_expression" or src(source, node.child_by_field_name("operator")) != "/":
        return None
    left = strip(node.child_by_field_name("left"))
    return poly_of(node.child_by_field_name("right"), source) if left is not None and src(source, left) == t else None


def radix_chain(digits: list[Digit], t: str) -> list[Digit] | str:
    """The digits from the unit-stride one up, each divisor the product of the moduli below: else why not."""
    out: list[Digit] = []
    div = Poly.const(1)
    left = list(digits)
    while left:
        d = next((x for x in left if x.div == div), None)
        if d is None:
            return f"{', '.join(x.var for x in left)}: not a digit of a mixed-radix split (divisor {div.text()} expected)"
        out.append(d)
        left.remove(d)
        if d.mod is None:
            break
        div = div * d.mod
    if left or not 2 <= len(out) <= 3:
        return f"needs {t} split into two or three digits ({t} / N and {t} % N), each declared once"
    return out


def divide(p: Poly, d: Poly) -> Poly | None:
    """p / d when d is one monomial that divides every term of p exactly."""
    if len(d.terms) != 1:
        return None
    (mono, c), out = d.terms[0], {}
    for m, k in p.terms:
        rest = list(m)
        for n in mono:
            if n not in rest:
                return None
            rest.remove(n)
        if k % c:
            return None
        out[tuple(rest)] = k // c
    return Poly.of(out)


def int_macros(source: bytes) -> dict[str, int]:
    """Object-like macros of the kernel file whose value is an integer expression (compile-time sizes). A macro the
    file defines twice, tests (`#ifndef N`, `defined(N)`) or undefines may take another value from the build's flags:
    it is left out, and a split by it is not proven."""
    text = source.decode("utf-8", "replace")
    out: dict[str, int] = {}
    for m in _DEFINE.finditer(text):
        name, value = m.group(1), re.sub(r"//.*|/\*.*?\*/", "", m.group(2)).strip()
        if len(re.findall(rf"#\s*define\s+{name}\b", text)) > 1 or re.search(rf"#\s*(ifn?def|undef)\s+{name}\b|defined\s*\(?\s*{name}\b", text):
            continue
        wrapped = b"int __s2s = " + value.encode() + b";"
        init = next((n for n in descendants(parse(wrapped, "cuda").root_node) if n.type == "init_declarator"), None)
        p = poly_of(init.child_by_field_name("value") if init is not None else None, wrapped)
        if p is not None:
            for n in p.names & set(out):
                p = p.subst(n, Poly.const(out[n]))
            if p.constant() is not None:
                out[name] = p.constant()  # type: ignore[assignment]
    return out


def value_text(p: Poly, macros: dict[str, int]) -> str:
    for n in p.names & set(macros):
        p = p.subst(n, Poly.const(macros[n]))
    return p.text().replace(" ", "")


def strip(node: Node | None) -> Node | None:
    while node is not None and node.type in {"parenthesized_expression", "cast_expression"}:
        node = node.child_by_field_name("value") if node.type == "cast_expression" else \
            next((c for c in node.named_children if c.type != "comment"), None)
    return node


def terms(node: Node, source: bytes, op: str) -> list[Node]:
    node = strip(node) or node
    if node.type == "condition_clause":
        node = strip(next((c for c in node.named_children if c.type != "comment"), node)) or node
    if node.type == "binary_expression" and src(source, node.child_by_field_name("operator")) == op:
        return terms(node.child_by_field_name("left"), source, op) + terms(node.child_by_field_name("right"), source, op)  # type: ignore[arg-type]
    return [node]


def idents_in(source: bytes, node: Node) -> set[str]:
    return {src(source, n) for n in descendants(node) if n.type == "identifier"}




def delete_statement(source: bytes, node: Node) -> Edit:
    """An edit removing a statement, with its line when it stands alone on one."""
    start = source.rfind(b"\n", 0, node.start_byte) + 1
    end = source.find(b"\n", node.end_byte)
    if source[start:node.start_byte].strip() or (end >= 0 and source[node.end_byte:end].strip()):
        return Edit(node.start_byte, node.end_byte, "")
    return Edit(start, end + 1 if end >= 0 else len(source), "")


def called_functions(source: bytes, dialect: str, body: Node) -> list[tuple[str, str]]:
    """(name, text) of the file's functions that `body` calls, directly or through one another."""
    defs: dict[str, Node] = {}
    for n in descendants(parse(source, dialect).root_node):
        d = n.child_by_field_name("declarator") if n.type == "function_definition" else None
        while d is not None and d.type != "function_declarator":
            d = d.child_by_field_name("declarator")
        if d is not None and d.child_by_field_name("declarator") is not None:
            defs[src(source, d.child_by_field_name("declarator"))] = n
    seen: list[tuple[str, str]] = []
    todo = [body]
    while todo:
        for n in descendants(todo.pop()):
            name = src(source, n.child_by_field_name("function")) if n.type == "call_expression" else ""
            if name in defs and name not in {s for s, _ in seen}:
                seen.append((name, src(source, defs[name])))
                todo.append(defs[name])
    return seen
