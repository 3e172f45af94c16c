"""walk-registers{cols=V}: each thread walks V consecutive x points, every value read once for them all.

The thread's x (`blockIdx.x * blockDim.x + threadIdx.x`, `get_global_id(0)`) becomes x0 = that * V (the launch's x
divided by V); the walked loop's body is copied per point (x -> x0 + i, its index locals renamed) under that point's copy
of the kernel's guard, so a point outside stays unstored. Every read of an array the kernel does not write is a cell:
its address, checked numerically for random values of every name, is a row's representative plus a small constant j
(the x neighbours of one point are the centre of the next: one register) plus m whole steps of the loop. A (row, j)
read at two or more contiguous m rotates along the loop as walk-registers does; the rest load each step. Cells of one
row loaded together come in as V-wide words where all V points are inside the guard and the address is aligned (tested
at run time), else as scalars, each only where a point that reads it is inside (no load the original did not make).
Results are the original's bit for bit: each point's expression is the original's over the same values.
"""
from __future__ import annotations

import random
import re
from collections.abc import Callable

from tree_sitter import Node

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts, Loop, idents
from s2s.lang.parsing import src

from ..common.index_steps import elem, value, word
from ..common.statements import declares
from ..common.tree import fresh, statements, walk
from ._walk_chunks import chunk_edits
from ._walk_emit import emit

_XDECL = re.compile(r"(?:const\s+)?(?:int|unsigned|unsigned int|size_t)\s+(\w+)\s*=\s*(\(?\s*(?:blockIdx\.x\s*\*\s*blockDim\.x\s*\+\s*"
                    r"threadIdx\.x|threadIdx\.x\s*\+\s*blockIdx\.x\s*\*\s*blockDim\.x|blockDim\.x\s*\*\s*blockIdx\.x\s*\+\s*"
                    r"threadIdx\.x|get_global_id\s*\(\s*0\s*\))\s*\)?)\s*;")
_GUARD = re.compile(r"if\s*\((.*)\)\s*(?:return\s*;|\{\s*return\s*;\s*\})", re.S)
_VEC = {"float", "double", "int", "unsigned int", "uint"}


def cols_loop(source: bytes, facts: KernelFacts, lp: Loop, node: Node, stmts: list[Node], written: set[str],
              expand: Callable[[str], str], macros: dict[str, int], cols: int,
              ety_of: Callable[[str], str]) -> tuple[list[tuple[int, int, str]], str, str] | Refused:
    """(replacements (start, end, text) of the kernel's x declaration, guard and walked loop's body; the text to put
    before the loop; a note)."""
    top = statements(node.parent) if node.parent is not None else []
    if lp.depth != 1 or node not in top:
        return Refused(f"the loop over `{lp.var}` is nested: cols copy a loop of the kernel's body")
    k = top.index(node)
    if any(s.type != "comment" for s in top[k + 1:]):
        return Refused(f"statements follow the loop over `{lp.var}`")
    xd = next((s for s in top[:k] if s.type == "declaration" and _XDECL.fullmatch(src(source, s))), None)
    if xd is None:
        return Refused("no `int x = blockIdx.x * blockDim.x + threadIdx.x` (or get_global_id(0)) before the loop")
    xm = _XDECL.fullmatch(src(source, xd))
    assert xm is not None
    xv = xm.group(1)
    guard = None
    for s in top[top.index(xd) + 1:k]:
        text = src(source, s)
        if re.search(word(xv), text):
            g = _GUARD.fullmatch(text) if s.type == "if_statement" else None
            if g is None or guard is not None:
                return Refused(f"`{text[:40]}` reads `{xv}` outside the loop: only one `if (...) return;` guard may")
            guard = (s, g.group(1))
    inner = src(source, node)
    if re.search(rf"(?<![\w.]){xv}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+\s*{xv}\b|\b{xv}\s*\+\+", inner):
        return Refused(f"`{xv}` is assigned in the loop")
    body = node.child_by_field_name("body")
    assert body is not None
    reads: list[tuple[Node, str, str]] = []
    for s in walk(body):
        if s.type == "subscript_expression" and s.parent is not None:
            head, idx = s.child_by_field_name("argument"), s.child_by_field_name("indices")
            if head is None or idx is None or head.type != "identifier":
                return Refused(f"`{src(source, s)}` is not a subscript of a named array")
            if s.parent.type == "assignment_expression" and s.parent.child_by_field_name("left") == s:
                continue
            if src(source, head) in written:
                return Refused(f"the loop reads `{src(source, head)}`, which the kernel writes: the points' order matters")
            reads.append((s, src(source, head), src(source, idx).strip()[1:-1].strip()))
    if not reads:
        return Refused("the loop reads no array")
    # the index locals: leading declarations with no subscript, renamed per point
    locs: list[Node] = []
    for s in stmts:
        if s.type != "declaration" or "[" in src(source, s) or not declares(source, s):
            break
        locs.append(s)
    rest = stmts[len(locs):]
    names = [declares(source, s) for s in locs]
    later = {declares(source, s) for s in rest if s.type == "declaration"} - {""}
    if any(idents(e) & later for _, _, e in reads):
        return Refused("an index reads a name the loop body computes")
    x0 = fresh(facts, source, f"{xv}0")
    ren = [{xv: x0 if i == 0 else f"({x0} + {i})",
            **{n: n if i == 0 else fresh(facts, source, f"{n}_{i}") for n in names}} for i in range(cols)]

    def rename(text: str, i: int) -> str:
        return re.sub(r"(?<![\w.>])([A-Za-z_]\w*)\b", lambda m: ren[i].get(m.group(1), m.group(1)), text)
    rng = random.Random(9)
    envs: list[dict[str, int]] = []
    for _ in range(4):
        env = dict(macros)
        for nm in {nm for _, _, e in reads for nm in idents(expand(e))} | {lp.var, x0}:
            env.setdefault(nm, rng.randint(40, 997) * (cols if nm == x0 else 1))
        envs.append(env)

    def vals(e: str, i: int) -> tuple[int, ...] | None:
        text = re.sub(word(xv), ren[i][xv], expand(e))
        got = [value(text, env) for env in envs]
        return None if any(v is None for v in got) else tuple(v for v in got if v is not None)
    steps = []
    for env in envs:
        a, b = value(re.sub(word(xv), x0, expand(reads[0][2])), {**env, lp.var: 7}), value(
            re.sub(word(xv), x0, expand(reads[0][2])), {**env, lp.var: 8})
        steps.append(None if a is None or b is None else b - a)
    # cells: (array, lineage, m, j) per (read, point)
    lines: list[tuple[str, tuple[int, ...]]] = []  # (array, representative values)
    cell_of: dict[tuple[int, int], tuple[int, int, int]] = {}
    rep_text: dict[tuple[int, int], tuple[str, int]] = {}  # (lineage, m) -> (index text, j of that text)
    for i in range(cols):
        for r, (_, arr, e) in enumerate(reads):
            v = vals(e, i)
            if v is None:
                return Refused(f"the index `{e}` cannot be evaluated")
            found = None
            for n, (a2, rv) in enumerate(lines):
                ms = {round((x - y) / st) if st else 0 for x, y, st in zip(v, rv, steps)}
                if a2 != arr or len(ms) != 1:
                    continue
                m = ms.pop()
                js = {x - y - m * (st or 0) for x, y, st in zip(v, rv, steps)}
                if len(js) == 1 and abs(j := js.pop()) <= 4 * cols:
                    found = (n, m, j)
                    break
            if found is None:
                found = (len(lines), 0, 0)
                lines.append((arr, v))
            cell_of[(r, i)] = found
            rep_text.setdefault(found[:2], (rename(e, i), found[2]))
    def consecutive(e: str) -> bool:
        at = [vals(e, i) for i in range(cols)]
        return all(v is not None and at[0] is not None and all(x - y == i for x, y in zip(v, at[0]))
                   for i, v in enumerate(at))
    def move(e: str, env: dict[str, int]) -> int | None:
        a, b = (value(re.sub(word(xv), x0, expand(e)), {**env, lp.var: z}) for z in (7, 8))
        return None if a is None or b is None else b - a
    moves = {move(e, env) for _, _, e in reads for env in envs}
    steady = None not in moves and all(d % cols == 0 for d in moves if d is not None)
    return emit(source, facts, lp, node, reads, cell_of, rep_text, lines, ren, rename, locs, rest, xd, xm, x0, guard,
                cols, ety_of, consecutive, steady)


def cols_rewrite(chunks: int, cols: int, ahead: int, source: bytes, facts: KernelFacts, lp: Loop, node: Node, body: Node,
                 stmts: list[Node], written: set[str], expand: Callable[[str], str], envs: list[dict[str, int]],
                 macros: dict[str, int]) -> Rewrite | Refused:
    """walk-registers{cols=V} (and chunks=N with it): the whole rewrite of the walked loop."""
    head, edits = "", list[Edit]()
    if chunks > 1:
        got = chunk_edits(source, facts, lp, node, body, stmts, expand, envs, chunks, facts.dialect)
        if isinstance(got, Refused):
            return got
        head, edits = got
    if ahead:
        return Refused("ahead does not combine with cols")
    out = cols_loop(source, facts, lp, node, stmts, written, expand, macros, cols, lambda a: elem(source, facts, a))
    if isinstance(out, Refused):
        return out
    reps, pre, note = out
    edits += [Edit(a, b, t) for a, b, t in reps] + [Edit(node.start_byte, node.start_byte, head + pre)]
    launch = LaunchChange(None, f"chunks-z:{chunks}", per_item=cols) if chunks > 1 else \
        LaunchChange(None, "coarsen-x", per_item=cols)
    return Rewrite(tuple(sorted(edits, key=lambda e: e.start)), launch,
                   note + (f", its range in {chunks} chunks over gridDim.z" if chunks > 1 else ""))
