"""warp-rows on a thread-per-row kernel whose row is walked by several loops, or by one loop that is not sums alone
(passes/reductions/_row_loops.py reads the loops): `lanes` threads per row, each loop's iterations split among them, every
reduction combined across the lanes by a `__shfl_xor_sync` butterfly right after its loop (so every lane holds it for
what follows), `__syncwarp` after a loop when memory it touches is stored by it or by a later loop, and lane 0 alone
running what follows the last loop. The row loops are the innermost loops: loops and ifs around them (a search that
walks the row once a trip and breaks when it converges) run on every lane alike, reading only values every lane holds;
a sum inside another loop restarts at zero on lanes other than 0 on every trip (it may carry an earlier trip's total).
A row loop whose elements move with a loop around it (a window, a tile) is refused: its lanes would split a short loop."""
from __future__ import annotations

from tree_sitter import Node

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import THREAD_BUILTIN, KernelFacts, idents

from ..common.guards import loop_block
from ..common.tree import body_node, fresh, indent_of, statements, text, walk
from ._row_loops import RowLoop, combine, row_loop, unit_step
from ._row_scalars import COUNT_UP, declares, moving, row_pointers, starts_at_zero
from ._warp_scan import value_of


def _declared(source: bytes, stmts: list[Node]) -> set[str]:
    names = set()
    for s in stmts:
        if s.type == "declaration":
            for d in s.children_by_field_name("declarator"):
                n = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                if n is not None and n.type == "identifier":
                    names.add(text(source, n))
    return names


def _type_of(source: bytes, stmts: list[Node], name: str) -> str:
    decl = next((s for s in stmts if declares(source, s, name)), None)
    kind = text(source, decl.child_by_field_name("type")) if decl is not None else ""
    return kind or "auto"


_LOOPS = frozenset({"for_statement", "while_statement", "do_statement"})


def _ancestors(node: Node, top: Node) -> list[Node]:
    out, cur = [], node.parent
    while cur is not None and cur != top:
        out.append(cur)
        cur = cur.parent
    return out


def _prior(node: Node) -> list[Node]:
    """The statements before `node` in its block and in every block around it, outermost first."""
    out: list[Node] = []
    cur = node
    while cur.parent is not None and cur.parent.type != "function_definition":
        parent = cur.parent
        if parent.type == "compound_statement":
            out = [c for c in statements(parent) if c.end_byte <= node.start_byte] + out
        cur = parent
    return out


def _row_loop_nodes(body: Node, starts: set[int]) -> list[Node]:
    return [n for n in walk(body) if n.type == "for_statement" and n.start_byte in starts]


def _plain_stores_only(source: bytes, holders: list[Node], inside: list[Node]) -> str | None:
    """Why a store outside the row loops is not `a[e] = v;` (every lane runs it: only an idempotent store may stay)."""
    def outside(n: Node) -> bool:
        return not any(r.start_byte <= n.start_byte < r.end_byte for r in inside)
    for h in holders:
        for n in walk(h, outside):
            if n.type in {"assignment_expression", "update_expression"} and outside(n):
                left = n.child_by_field_name("left") or n.child_by_field_name("argument")
                if left is not None and left.type in {"subscript_expression", "pointer_expression", "field_expression"} \
                        and (n.type == "update_expression" or text(source, n.child_by_field_name("operator")) != "="):
                    return f"{text(source, n)[:60]!r} outside the row loops would run on every lane (only `a[e] = v;` may)"
    return None


def row_walks(source: bytes, facts: KernelFacts, lanes: int, block: int) -> Rewrite | Refused:
    """Row loops are the innermost loops; loops around them (an iteration to convergence, a bisection) and everything
    outside the row loops run on every lane of the row alike, reading only values every lane holds."""
    body, var = body_node(source, facts), facts.var_for("x")
    top = statements(body)
    inner = [lp for lp in facts.loops if lp.innermost]
    outer_vars = {lp.var for lp in facts.loops if not lp.innermost and lp.var}
    nodes = _row_loop_nodes(body, {lp.start for lp in inner})
    if len(nodes) != len(inner):
        return Refused("every innermost loop must be a for loop over the row")
    stmts, guard = loop_block(source, top, nodes[0].start_byte, var)
    if not stmts:
        stmts, guard = top, None
    holders = [s for s in stmts if any(s.start_byte <= n.start_byte < s.end_byte for n in nodes)]
    if sum(len([n for n in nodes if h.start_byte <= n.start_byte < h.end_byte]) for h in holders) != len(nodes):
        return Refused("the row loops must be inside statements of the kernel body (or of one guard `if (row < n) { ... }`)")
    before = [s for s in top if s.end_byte <= (guard.start_byte if guard is not None else holders[0].start_byte)]
    mapping = next((s for s in before if declares(source, s, var)), None)
    if mapping is None:
        return Refused("the row loops must follow the thread-index declaration")
    for s in [*top, *stmts] if guard is not None else top:
        if s is not guard and s is not mapping and (THREAD_BUILTIN.search(text(source, s)) or "__syncthreads" in text(source, s)):
            return Refused("thread indices are used outside the row mapping")
    if any(s.write and s.start < holders[0].start_byte for s in facts.subscripts):
        return Refused("global memory is written before the loop (every lane would write it)")
    first, last = stmts.index(holders[0]), stmts.index(holders[-1])
    why = _plain_stores_only(source, stmts[first:last + 1], nodes)
    if why is not None:
        return Refused(why)
    shifted = moving(source, stmts[first:last + 1], nodes, outer_vars)
    if any(shifted & idents(x.index) for n in nodes for x in facts.subscripts if n.start_byte <= x.start < n.end_byte) \
            or any(shifted & idents(f"{lp.init} {lp.cond}") for lp in inner):
        return Refused("a row loop inside another loop walks a different stretch on each trip of the outer loop (a tile or "
                       "stencil window, not a row): its lanes would split a short loop")
    walks: list[RowLoop] = []
    for node in nodes:
        loop = next(lp for lp in facts.loops if lp.start == node.start_byte)
        step = COUNT_UP.match(loop.step)
        if not step or next(g for g in step.groups()[1:] if g) != loop.var or not loop.bound or "<" not in loop.cond:
            return Refused("each row loop must count up by one: for (j = s; j < n; ++j)")
        if value_of(node.child_by_field_name("initializer")) is None or node.child_by_field_name("update") is None:
            return Refused("unexpected loop header")
        found = row_loop(source, node, loop.var, _declared(source, [*before, *_prior(node)]) - {var})
        if isinstance(found, str):
            return Refused(found)
        if set(found.reductions) & idents(f"{loop.init} {loop.cond}"):
            return Refused("a row loop's header reads a reduction of the loop (an early exit on a running value)")
        walks.append(found)
    if not any(w.reductions for w in walks) and not any(w.stores for w in walks):
        return Refused("the row loops neither reduce nor store")
    row = {var, *facts.thread_vars}
    moved = row_pointers(source, [*before, *stmts[:first]], row)
    steps = [(lp, x) for lp, n in zip(inner, nodes) for x in walk(n) if x.type == "subscript_expression" and unit_step(source, x, lp.var)]
    if not any((row - {lp.var}) & idents(text(source, x)) or text(source, x.child_by_field_name("argument")) in moved
               or (row - {lp.var}) & idents(f"{lp.init} {lp.cond}") for lp, x in steps):
        return Refused("no element the row loops touch steps by one along the row with the loop's variable: the lanes "
                       "of a row would split a walk every thread reads alike (a broadcast) or one already adjacent "
                       "across threads (a column-major layout), nothing to coalesce")
    lane, mask, off, other = (fresh(facts, source, w) for w in ("lane", "mask", "off", "other"))
    decl = value_of(mapping)
    assert decl is not None
    pad = indent_of(source, mapping.start_byte)
    mask_value = "0xffffffffu" if lanes == 32 else f"0x{(1 << lanes) - 1:x}u << (threadIdx.x % 32u / {lanes} * {lanes})"
    edits = [Edit(decl.start_byte, decl.end_byte, f"({text(source, decl)}) / {lanes}"),
             Edit(mapping.end_byte, mapping.end_byte, f"\n{pad}const int {lane} = threadIdx.x % {lanes};"
                                                      f"\n{pad}const unsigned {mask} = {mask_value};")]
    after = stmts[last + 1:]
    sync = any(w.stores for w in walks) or any(x.write and holders[0].start_byte <= x.start < holders[-1].end_byte for x in facts.subscripts)
    for w in walks:
        node, lpad = w.node, indent_of(source, w.node.start_byte)
        prior = [*before, *_prior(node)]
        nested = any(a.type in _LOOPS for a in _ancestors(node, body))
        value, update = value_of(node.child_by_field_name("initializer")), node.child_by_field_name("update")
        assert value is not None and update is not None
        loop_var = next(lp.var for lp in facts.loops if lp.start == node.start_byte)
        edits += [Edit(value.end_byte, value.end_byte, f" + {lane}"), Edit(update.start_byte, update.end_byte, f"{loop_var} += {lanes}")]
        started = [r.name for r in w.reductions.values()  # inside another loop: the sum may carry an earlier trip's total
                   if r.kind == "sum" and (nested or not starts_at_zero(source, prior, r.name))]
        bare = node.parent is not None and node.parent.type != "compound_statement"  # `for (...) for (c ...)`: braces
        head = "{ " if bare else ""
        if started:  # a sum entering with a value (a bias, an earlier loop's total) keeps it in lane 0 only
            head += f"if ({lane} != 0) {{ " + " ".join(f"{a} = 0;" for a in started) + f" }}\n{lpad}"
        if head:
            p = node.prev_named_sibling
            at_byte = p.start_byte if not bare and p is not None and p.type == "preproc_call" else node.start_byte
            edits.append(Edit(at_byte, at_byte, head))
        tail = ""
        if w.reductions:
            folds = []
            for r in w.reductions.values():
                if r.kind == "sum":
                    folds.append(combine(source, r, f"__shfl_xor_sync({mask}, {r.name}, {off}, {lanes})"))
                else:
                    folds.append(f"{{ const {_type_of(source, prior, r.name)} {other} = __shfl_xor_sync({mask}, {r.name}, {off}, {lanes}); "
                                 f"{combine(source, r, other)} }}")
            tail += f"\n{lpad}for (int {off} = {lanes} / 2; {off} > 0; {off} /= 2) {{" + "".join(
                f"\n{lpad}    {f}" for f in folds) + f"\n{lpad}}}"
        if sync and (node is not stmts[last] or after):
            tail += f"\n{lpad}__syncwarp({mask});"
        if node is stmts[last] and after:
            tail += f"\n{lpad}if ({lane} != 0) return;"
        edits.append(Edit(node.end_byte, node.end_byte, tail + (" }" if bare else "")))
    if stmts[last] not in nodes and after:  # lane 0 alone runs what follows the statement holding the last row loop
        edits.append(Edit(stmts[last].end_byte, stmts[last].end_byte, f"\n{indent_of(source, stmts[last].start_byte)}if ({lane} != 0) return;"))
    names = [r.name for w in walks for r in w.reductions.values()]
    return Rewrite(tuple(edits), LaunchChange((block, 1, 1), "rows-per-warp", per_item=lanes),
                   f"{lanes} lanes per row of {var}, {len(walks)} row loop{'s' if len(walks) > 1 else ''}"
                   + (f", butterfly of {', '.join(names)}" if names else ""))
