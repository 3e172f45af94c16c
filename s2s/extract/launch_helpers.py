"""Launch sizes a host helper sets through a reference or a pointer: `layout(n, &grid, &block)` with
`void layout(int n, dim3* g, dim3* b) { b->x = 256; g->x = (n + 255) / 256; }`, or `void layout(int n, dim3& g, ...)`.

The helper is followed when it is simple: one definition, its writes of the parameter plain and unconditional, no
early return, the parameter not handed on. Otherwise the size is not known (FILL-IN), never the `dim3 g;` default.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tree_sitter import Node

from s2s.lang.parsing import text

from .hostcode import Scope, handing_call

if TYPE_CHECKING:
    from .infer import Values
    from .trail import Trail

_LOOPS = {"for_statement", "while_statement", "do_statement", "for_range_loop"}
_SOMETIMES = _LOOPS | {"if_statement", "else_clause", "switch_statement", "case_statement", "conditional_expression",
                       "lambda_expression", "try_statement", "catch_clause"}
Dims = tuple[int, int, int]


def _ancestors(node: Node, stop: Node) -> list[Node]:
    out, cur = [], node.parent
    while cur is not None and cur != stop:
        out.append(cur)
        cur = cur.parent
    return out


def through_helper(values: Values, expr: str, scope: Scope, trail: Trail, depth: int,
                   dims_of: Callable[[Values, str, Scope, Trail, int], Dims | None]) -> Dims | None | bool:
    """The dims of the dim3 variable `expr` at the scope's limit when its last write there is a call that takes it by
    address or reference: the helper's result (with field writes after the call); None when that is not known;
    False when the last write is no such call (the caller reads the variable its usual way)."""
    fn = scope.fn
    if fn is None or depth > 12:
        return False
    before = [w for w in scope.writes_of(expr) if w[0].start_byte < scope.limit]
    if not before or before[-1][1] != "modify":
        return False
    node = before[-1][0]
    call = handing_call(node)
    if call is None:
        return False
    where = f"{scope.source.rel}:{call.start_point[0] + 1}"
    loops = [a for a in _ancestors(fn.descendant_for_byte_range(scope.limit, scope.limit) or fn, fn) if a.type in _LOOPS]
    for name in (expr, *(f"{expr}.{m}" for m in "xyz")):
        for w in scope.writes_of(name) if name == expr else []:
            if any(lp.start_byte <= w[0].start_byte < lp.end_byte for lp in loops) and w[0].start_byte >= scope.limit:
                trail.add(f"{expr}: changes in the loop around the launch at {scope.source.rel}:{w[0].start_point[0] + 1}")
                return None
    if any(a.type in _SOMETIMES and not a.start_byte <= scope.limit < a.end_byte for a in _ancestors(call, fn)):
        trail.add(f"{expr}: set by the call at {where} under a condition or in a loop")
        return None
    args = [c for c in call.named_children[-1].named_children if c.type != "comment"]
    position = next((i for i, a in enumerate(args) if a.start_byte <= node.start_byte < a.end_byte), -1)
    callee = text(call.child_by_field_name("function")).split("<")[0].split("::")[-1].strip()
    prior = Scope(scope.source, fn, call.start_byte, scope.program, scope.depth)
    start = dims_of(values, expr, prior, trail, depth + 1)  # the variable before the call (infer's reader)
    got = _helper_result(values, callee, position, list(start) if start else [None, None, None], trail, depth)
    if got is None:
        trail.add(f"{expr}: set by {callee}() at {where}, which is not followed (see above)")
        return None
    trail.add(f"{expr} = dim3{tuple(got)} as {callee}() at {where} leaves it" if None not in got
              else f"{expr}: {callee}() at {where} leaves a part of it not known before the run")
    base: list[int | None] = list(got)
    for i, member in enumerate("xyz"):  # `grid.y = 4;` after the helper
        mfound, mwhy = scope.reaching(f"{expr}.{member}")
        if mwhy:
            trail.add(f"{expr}.{member}: not known before the run ({mwhy})")
            return None
        if mfound is not None and mfound.at > call.start_byte:
            sub = Scope(mfound.scope.source, mfound.scope.fn, mfound.at, values.program, mfound.scope.depth)
            v = values.number(mfound.expr, sub, trail, depth + 1)
            base[i] = int(v) if v is not None else None
    if any(b is None for b in base):
        return None
    return int(base[0] or 0), int(base[1] or 0), int(base[2] or 0)


def _helper_result(values: Values, callee: str, position: int, start: list[int | None], trail: Trail,
                   depth: int) -> list[int | None] | None:
    """The dims a helper leaves in its parameter at `position`, from `start`; None when it is not simple."""
    defs = values.program.definitions_of(callee)
    if len(defs) != 1 or position < 0:
        trail.add(f"{callee}(): {'no definition' if not defs else 'several definitions'} found" if position >= 0
                  else f"{callee}(): the argument is not found")
        return None
    source, hfn = defs[0]
    decl = hfn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    params = [c for c in plist.named_children if c.type.endswith("parameter_declaration")] if plist is not None else []
    body = hfn.child_by_field_name("body")
    if position >= len(params) or body is None:
        return None
    pdecl = params[position].child_by_field_name("declarator")
    pointer = pdecl is not None and pdecl.type == "pointer_declarator"
    names = [n for n in _idents(pdecl) if n] if pdecl is not None else []
    if not names or not pointer and (pdecl is None or pdecl.type != "reference_declarator"):
        trail.add(f"{callee}(): its parameter {position + 1} is neither a pointer nor a reference")
        return None
    pname = names[-1]
    why = _not_simple(body, pname, pointer)
    if why:
        trail.add(f"{callee}(): {why}")
        return None
    hs = Scope(source, hfn, body.end_byte - 1, values.program, 1)
    whole, sep = (f"*{pname}", "->") if pointer else (pname, ".")
    found, fwhy = hs.reaching(whole)
    if fwhy:
        trail.add(f"{callee}(): {fwhy}")
        return None
    base = list(start)
    if found is not None:
        d = values.dims(found.expr, Scope(source, hfn, found.at, values.program, 1), trail, depth + 1)
        base = list(d) if d else [None, None, None]
    for i, member in enumerate("xyz"):
        mfound, mwhy = hs.reaching(f"{pname}{sep}{member}")
        if mwhy:
            trail.add(f"{callee}(): {mwhy}")
            return None
        if mfound is not None and (found is None or mfound.at > found.at):
            v = values.number(mfound.expr, Scope(source, hfn, mfound.at, values.program, 1), trail, depth + 1)
            base[i] = int(v) if v is not None else None
            trail.add(f"{pname}{sep}{member} = {mfound.expr} at {mfound.where}")
    return base


def _idents(node: Node) -> list[str]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            out.append(text(n))
        stack.extend(reversed(n.named_children))
    return out


def _not_simple(body: Node, pname: str, pointer: bool) -> str:
    """Why a helper's writes of its parameter `pname` cannot be read as plain statements ("" when they can): a
    return before its end, the parameter handed on or written through a spelling not followed."""
    stack = [body]
    while stack:
        n = stack.pop()
        stack.extend(n.named_children)
        if n.type == "return_statement" and not (n.parent is not None and n.parent == body
                                                 and n == body.named_children[-1]):
            return f"a return at line {n.start_point[0] + 1} before its end"
        if n.type != "identifier" or text(n) != pname:
            continue
        p = n.parent
        if p is not None and p.type in {"parameter_declaration", "pointer_declarator", "reference_declarator"}:
            continue
        if p is not None and p.type == "field_expression":  # g.x, g->x
            continue
        if pointer and p is not None and p.type == "pointer_expression" and text(p).lstrip().startswith("*") and \
                p.parent is not None and p.parent.type == "assignment_expression" and \
                p.parent.child_by_field_name("left") == p:
            continue
        if not pointer and p is not None and p.type == "assignment_expression" and p.child_by_field_name("left") == n:
            continue
        return f"its parameter {pname} is used as '{' '.join(text(p).split())[:40] if p is not None else pname}'"
    return ""


__all__ = ["through_helper"]
