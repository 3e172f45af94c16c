"""The warp scan behind warp-rows: a thread-per-row running sum `X[..c..] = run; run += e(c);` as lanes that scan.

Helpers of one pass, kept apart so that the pass module stays small.
"""
from __future__ import annotations

from tree_sitter import Node

from s2s.lang.edits import Refused
from s2s.lang.kernel_facts import KernelFacts, idents

from ..common.tree import fresh, indent_of, statements, text


def scan_loop(source: bytes, facts: KernelFacts, loop: Node, scan: tuple[str, Node, Node, bool], ty: str, lanes: int,
          lane: str, mask: str, off: str, unroll: int = 1) -> str | Refused:
    """The running-sum loop `for (c ...) { X[f(c)] = run; run += e(c); }` as a warp scan: the lanes take `lanes`
    consecutive c at a time, scan their terms with shuffles, store, and carry the chunk's total. With `unroll` > 1 each
    trip loads the terms of `unroll` chunks first (that many loads in flight per lane, where one trip of the scan's
    shuffles otherwise waited for each load), then scans the chunks one after another."""
    acc, store, add, exclusive = scan
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    value = value_of(init)
    if init is None or init.type != "declaration" or value is None or cond is None:
        return Refused("the scan loop must declare its variable: for (int c = s; c < n; ++c)")
    var = _loop_var(source, init)
    c0, term, inc, up, ex = (fresh(facts, source, w) for w in (f"{var}0", "term", "inc", "up", "ex"))
    right = add.child_by_field_name("right")
    target = store.child_by_field_name("right")
    if right is None or target is None:
        return Refused("unexpected scan statements")
    stored = text(source, store)[: target.start_byte - store.start_byte] + \
        (f"{acc} + {ex}" if exclusive else f"{acc} + {inc}") + text(source, store)[target.end_byte - store.start_byte:]
    pad = indent_of(source, loop.start_byte)
    if unroll > 1:
        return ("\n" + pad).join(_unrolled(source, facts, init, cond, value, right, stored, scan, ty, lanes, lane, mask, off, unroll,
                                           (var, c0, inc, up, ex)))
    lines = [f"for ({text(source, init.child_by_field_name('type'))} {c0} = {text(source, value)}; {c0} < {_bound(source, cond, var)}; "
             f"{c0} += {lanes}) {{",
             f"    const {text(source, init.child_by_field_name('type'))} {var} = {c0} + {lane};",
             f"    {ty} {term} = {text(source, cond)} ? ({ty})({text(source, right)}) : ({ty})0;",
             f"    {ty} {inc} = {term};",
             f"    for (int {off} = 1; {off} < {lanes}; {off} *= 2) {{",
             f"        {ty} {up} = __shfl_up_sync({mask}, {inc}, {off}, {lanes});",
             f"        if ({lane} >= {off}) {inc} += {up};",
             "    }",
             *([f"    {ty} {ex} = __shfl_up_sync({mask}, {inc}, 1, {lanes});", f"    if ({lane} == 0) {ex} = ({ty})0;"]
               if exclusive else []),
             f"    if ({text(source, cond)}) {stored.strip()};",
             f"    {acc} += __shfl_sync({mask}, {inc}, {lanes} - 1, {lanes});",
             "}"]
    return ("\n" + pad).join(lines)


def _unrolled(source: bytes, facts: KernelFacts, init: Node, cond: Node, value: Node, right: Node, stored: str,
              scan: tuple[str, Node, Node, bool], ty: str, lanes: int, lane: str, mask: str, off: str, unroll: int,
              names: tuple[str, str, str, str, str]) -> list[str]:
    var, c0, inc, up, ex = names
    acc, exclusive = scan[0], scan[3]
    ity, test = text(source, init.child_by_field_name("type")), text(source, cond)
    term, u = fresh(facts, source, "term"), fresh(facts, source, "u")
    at = f"const {ity} {var} = {c0} + {u} * {lanes} + {lane};"
    return [f"for ({ity} {c0} = {text(source, value)}; {c0} < {_bound(source, cond, var)}; {c0} += {lanes * unroll}) {{",
            f"    {ty} {term}[{unroll}];",
            "    #pragma unroll",
            f"    for (int {u} = 0; {u} < {unroll}; ++{u}) {{",
            f"        {at}",
            f"        {term}[{u}] = {test} ? ({ty})({text(source, right)}) : ({ty})0;",
            "    }",
            "    #pragma unroll",
            f"    for (int {u} = 0; {u} < {unroll}; ++{u}) {{",
            f"        {at}",
            f"        {ty} {inc} = {term}[{u}];",
            f"        for (int {off} = 1; {off} < {lanes}; {off} *= 2) {{",
            f"            {ty} {up} = __shfl_up_sync({mask}, {inc}, {off}, {lanes});",
            f"            if ({lane} >= {off}) {inc} += {up};",
            "        }",
            *([f"        {ty} {ex} = __shfl_up_sync({mask}, {inc}, 1, {lanes});", f"        if ({lane} == 0) {ex} = ({ty})0;"]
              if exclusive else []),
            f"        if ({test}) {stored.strip()};",
            f"        {acc} += __shfl_sync({mask}, {inc}, {lanes} - 1, {lanes});",
            "    }",
            "}"]


def value_of(stmt: Node | None) -> Node | None:
    if stmt is None:
        return None
    if stmt.type == "assignment_expression":
        return stmt.child_by_field_name("right")
    d = stmt.child_by_field_name("declarator")
    return d.child_by_field_name("value") if d is not None and d.type == "init_declarator" else None


def _loop_var(source: bytes, init: Node) -> str:
    d = init.child_by_field_name("declarator")
    return text(source, d.child_by_field_name("declarator") if d is not None and d.type == "init_declarator" else d)


def _bound(source: bytes, cond: Node, var: str) -> str:
    c = cond.named_children[0] if cond.type == "parenthesized_expression" and cond.named_children else cond
    return text(source, c.child_by_field_name("right")) if c.type == "binary_expression" else text(source, c)


def scan_shape(source: bytes, loop: Node, var: str) -> tuple[str, Node, Node, bool] | str:
    """(running sum, its store, its `+=`, exclusive?) when the loop body is `X[..] = run; run += e;` (exclusive) or the
    two the other way round (inclusive), e not reading run; why not otherwise."""
    body = loop.child_by_field_name("body")
    items = statements(body) if body is not None and body.type == "compound_statement" else []
    exprs = [s.named_children[0] if s.type == "expression_statement" and s.named_children else None for s in items]
    if len(exprs) != 2 or any(e is None or e.type != "assignment_expression" for e in exprs):
        return "or a running sum: X[..] = run; run += e;"
    for k, e in enumerate(exprs):
        assert e is not None
        other = exprs[1 - k]
        assert other is not None
        left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
        oleft, oright = other.child_by_field_name("left"), other.child_by_field_name("right")
        if left is None or left.type != "identifier" or text(source, e.child_by_field_name("operator")) != "+=" or right is None:
            continue
        acc = text(source, left)
        if oleft is None or oleft.type != "subscript_expression" or oright is None or text(source, oright) != acc \
                or text(source, other.child_by_field_name("operator")) != "=" or acc in idents(text(source, right)) or acc == var:
            continue
        return acc, other, e, k == 1
    return "or a running sum: X[..] = run; run += e;"
