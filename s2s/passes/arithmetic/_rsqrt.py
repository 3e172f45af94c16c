"""Division by a square root for fast-math: `a / sqrtf(x)` as `a * rsqrtf(x)`, and float locals of a square root that
are only ever divisors. Only the operator and the function's name change, so every expression keeps its parse."""
from __future__ import annotations

import re

from tree_sitter import Node

from s2s.lang.edits import Edit
from s2s.lang.parsing import src

from ..common.tree import text, walk

_ONE = re.compile(r"1(?:\.0*)?[fF]|1\.0*[fF]?")


def sqrt_division(source: bytes, fn: Node, n: Node) -> list[Edit]:
    """The edits that make division `n` (`a / sqrtf(x)`, `a /= sqrtf(x)`) a product with rsqrtf; [] for any other node."""
    division = _divide(source, n)
    call = _sqrt_call(source, fn, division[2]) if division is not None else None
    return _reciprocal(source, *division, call) if division is not None and call is not None else []


def _sqrt_call(source: bytes, fn: Node, n: Node | None) -> Node | None:
    """The single-precision square root call that `n` is (inside any parentheses), else None."""
    while n is not None and n.type == "parenthesized_expression" and n.named_child_count == 1:
        n = n.named_children[0]
    if n is None or n.type != "call_expression":
        return None
    f = n.child_by_field_name("function")
    name = src(source, f) if f is not None and f.type == "identifier" else ""
    return n if name == "sqrtf" or (name == "sqrt" and float_argument(source, fn, n)) else None


def _divide(source: bytes, n: Node) -> tuple[Node, Node, Node] | None:
    """(left, operator, right) of a division, `a / b` or `a /= b`."""
    if n.type not in {"binary_expression", "assignment_expression"}:
        return None
    op, left, right = (n.child_by_field_name(f) for f in ("operator", "left", "right"))
    if op is None or left is None or right is None or text(source, op) not in {"/", "/="}:
        return None
    return left, op, right


def _reciprocal(source: bytes, left: Node, op: Node, right: Node, call: Node) -> list[Edit]:
    """`a / sqrtf(x)` -> `a * rsqrtf(x)`, `a /= ...` -> `a *= ...`; `1.0f / sqrtf(x)` -> `rsqrtf(x)`."""
    f = call.child_by_field_name("function")
    assert f is not None
    rename = Edit(f.start_byte, f.end_byte, "rsqrtf")
    if text(source, op) == "/" and _ONE.fullmatch(src(source, left).strip()):
        return [Edit(left.start_byte, right.start_byte, ""), rename]
    return [Edit(op.start_byte, op.end_byte, "*" + text(source, op)[1:]), rename]


_DECLARATORS = {"init_declarator", "declaration", "parameter_declaration", "pointer_declarator", "array_declarator",
                "reference_declarator", "for_range_loop"}


def divisor_locals(source: bytes, fn: Node) -> list[Edit]:
    """`float r = sqrtf(x);` whose every other use is a divisor (`m / r`, `a /= r`): `rsqrtf` and `*` instead.
    A name declared more than once in the function (a parameter, a shadowing local) or used otherwise is left."""
    body = fn.child_by_field_name("body")
    if body is None:
        return []
    names = [n for n in walk(fn) if n.type == "identifier"]
    declared = [n for n in names if n.parent is not None and n.parent.type in _DECLARATORS
                and _same(n.parent.child_by_field_name("declarator"), n)]
    edits: list[Edit] = []
    for decl in walk(body):
        if decl.type != "declaration" or text(source, decl.child_by_field_name("type")) != "float":
            continue
        for d in decl.children_by_field_name("declarator"):
            ident, call = d.child_by_field_name("declarator"), _sqrt_call(source, fn, d.child_by_field_name("value"))
            if d.type != "init_declarator" or ident is None or ident.type != "identifier" or call is None:
                continue
            name = src(source, ident)
            if sum(src(source, n) == name for n in declared) != 1:
                continue
            uses = [_divisor(source, n) for n in names if src(source, n) == name and not _same(n, ident)]
            if not uses or any(u is None for u in uses):
                continue
            f = call.child_by_field_name("function")
            assert f is not None
            edits.append(Edit(f.start_byte, f.end_byte, "rsqrtf"))
            edits += [Edit(op.start_byte, op.end_byte, "*" + text(source, op)[1:]) for op in uses if op is not None]
    return edits


def _divisor(source: bytes, n: Node) -> Node | None:
    """The operator of the division whose divisor `n` is (inside any parentheses), else None."""
    while n.parent is not None and n.parent.type == "parenthesized_expression":
        n = n.parent
    division = _divide(source, n.parent) if n.parent is not None else None
    return division[1] if division is not None and _same(division[2], n) else None


def _same(a: Node | None, b: Node | None) -> bool:
    return a is not None and b is not None and (a.start_byte, a.end_byte, a.type) == (b.start_byte, b.end_byte, b.type)


def float_argument(source: bytes, fn: Node, call: Node) -> bool:
    """Whether the call's one argument is single precision: a float literal, or a name the function declares `float`
    (`float expArg = ...; cos(expArg)`, as Parboil's mri-q writes it)."""
    args = call.child_by_field_name("arguments")
    items = [c for c in args.named_children if c.type != "comment"] if args is not None else []
    if len(items) != 1:
        return False
    arg = src(source, items[0]).strip()
    if re.fullmatch(r"[0-9.]+(?:[eE][-+]?\d+)?[fF]", arg):
        return True
    if not re.fullmatch(r"[A-Za-z_]\w*", arg):
        return False
    body = src(source, fn)
    return re.search(r"\bfloat\s+(?:[\w\s=+\-*/().\[\]]*,\s*)?" + arg + r"\s*[=;,)\[]", body) is not None
