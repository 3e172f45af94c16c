"""stencil-registers{cols>1}' streamed body: the window's rows loaded one after another, each row's terms added to the
sums of every output that reads it right after the load (the outputs' row loop interchanged with the thread's
outputs), so that only a row, the sums and the coefficients are live, not the whole window (conv2d_5x5 at 4 x 4: 40
registers against 106, as the hand probe's x-quads). Each output's terms are still added in the original order.

It applies to a point body of the shape `if (...) return;`* `T acc = init;` `for (i = lo; i < hi; i++) BODY` TAIL where
BODY writes nothing but `acc` and its own locals (no stores, no exits), every stencil read in it sits at row i + c of
one c, and the coefficients it reads are loaded before that loop; else the caller keeps the window-first form. The
exit guards move to the tail (computing a dead output's sum touches registers only); the coefficients are loaded once
before the rows where some output of the thread passes the guards (where the original's first reached them)."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from s2s.lang.affine import Poly
from s2s.lang.index_split import int_macros
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import KernelModel
from s2s.lang.stencil import Stencil

from ..common.statements import returns_only
from ..common.tree import text, walk
from ._column_stores import row_stores
from ._register_window import Coefficients
from ._stencil import spliced

_EXITS = {"return_statement", "break_statement", "continue_statement", "goto_statement"}


@dataclass(frozen=True)
class Points:
    """Where the thread's outputs are: `y` and `x`'s declarations text for output (cy, cx) and the loop names."""
    f: int
    cols: int
    cy: str
    cx: str
    decls: tuple[tuple[str, str], ...]  # (name, `int y = ybase + cy;`), y's and x's, declared where the body uses them

    def loops(self, body: list[str]) -> list[str]:
        used = [d for n, d in self.decls if re.search(rf"\b{n}\b", "\n".join(body))]
        head = ["#pragma unroll", f"for (int {self.cy} = 0; {self.cy} < {self.f}; ++{self.cy}) {{", "    #pragma unroll",
                f"    for (int {self.cx} = 0; {self.cx} < {self.cols}; ++{self.cx}) {{"] + [f"        {d}" for d in used]
        return head + ["        " + ln if ln else ln for ln in body] + ["    }", "}"]


def _lines(t: str) -> list[str]:
    """A spliced statement's lines, its common indentation removed."""
    rows = t.strip("\n").split("\n")
    first = rows[0].lstrip()
    rest = [r for r in rows[1:] if r.strip()]
    cut = min((len(r) - len(r.lstrip()) for r in rest), default=0)
    return [first] + [r[cut:] if r.strip() else "" for r in rows[1:]]


def streamed(source: bytes, facts: KernelFacts, rest: list[Node], edits: list[tuple[int, int, str]], st: Stencil,
             model: KernelModel, groups: list[Coefficients], window: list[str], wr: str, xbase: str, pts: Points,
             fresh_name: Callable[[str], str]) -> list[str] | str:
    """The streamed body's lines (coefficients, sums, the row loop, the stores), or why the shape does not fit."""
    if len(st.arrays) != 1:
        return "more than one stencil array"
    i = 0
    guards: list[str] = []
    while i < len(rest) and rest[i].type == "if_statement" and returns_only(source, rest[i]) \
            and rest[i].child_by_field_name("alternative") is None:
        cond = rest[i].child_by_field_name("condition")
        if cond is None:
            return "an exit without a condition"
        guards.append(spliced(source, cond.start_byte, cond.end_byte, edits))
        i += 1
    if i + 1 >= len(rest) or rest[i].type != "declaration" or rest[i + 1].type != "for_statement":
        return "no `T acc = init;` followed by a loop after the exits"
    decl, loop, tail = rest[i], rest[i + 1], rest[i + 2:]
    inits = [c for c in decl.named_children if c.type == "init_declarator"]
    if len(inits) != 1 or len(decl.named_children) != 2:
        return "the accumulator is not declared alone with a value"
    acc, init = text(source, inits[0].child_by_field_name("declarator")), inits[0].child_by_field_name("value")
    ctype = text(source, decl.child_by_field_name("type"))
    if init is None or any(init.start_byte <= r.start < init.end_byte for r in st.arrays[0].reads):
        return "the accumulator's first value reads the stencil"
    lp = next((m for m in model.loops if m.start == loop.start_byte), None)
    lo, hi = (None, None) if lp is None or lp.lower is None or lp.upper is None else (lp.lower.constant(), lp.upper.constant())
    if lp is None or lo is None or hi is None or lp.step != 1:
        return "the loop after the accumulator has no constant range stepping by one"
    body = loop.child_by_field_name("body")
    rparen = next((c for c in loop.children if c.type == ")"), None)
    if body is None or rparen is None:
        return "the loop has no body"
    why = _pure(source, body, acc) or _uniform_reads(source, facts, model, st, groups, body, lp.var)
    if why:
        return why
    rows = {r.offset[1] - Poly.name(lp.var) for r in st.arrays[0].reads if body.start_byte <= r.start < body.end_byte}
    if len(rows) != 1 or next(iter(rows)).constant() is None:
        return f"the stencil's rows in the loop are not {lp.var} + one constant"
    d = next(iter(rows)).constant() - st.arrays[0].extent("y")[0]  # type: ignore[operator]
    if any(not body.start_byte <= r.start < body.end_byte and not (tail and tail[0].start_byte <= r.start) for r in st.arrays[0].reads):
        return "a stencil read outside the loop and the tail"
    early = [g for g in groups if g.at == loop.start_byte]
    if any(g not in early and not (tail and tail[0].start_byte <= g.at) for g in groups):
        return "coefficients loaded inside the loop"
    sums = fresh_name(f"{acc}_a")
    cell = f"{sums}[{pts.cy}][{pts.cx}]"
    nodes = [n for t in [body, *tail] for n in walk(t) if n.type == "identifier" and text(source, n) == acc
             and not any(s <= n.start_byte < e for s, e, _ in edits)]
    swap = edits + [(n.start_byte, n.end_byte, cell) for n in nodes]
    step = _lines(spliced(source, rparen.end_byte, loop.end_byte, swap))
    after = _lines(spliced(source, tail[0].start_byte, tail[-1].end_byte, swap)) if tail else []
    dead = guards[0] if len(guards) == 1 else "(" + " || ".join(guards) + ")"
    anyname = fresh_name("any")
    out: list[str] = []
    for g in groups:
        out += g.declare(facts, source)[:1] if g in early else g.declare(facts, source)
    if guards:  # a thread none of whose points passes the exits has nothing to do (nor did its points)
        out += [f"bool {anyname} = false;"] + pts.loops([f"{anyname} = {anyname} || !{dead};"]) + [f"if (!{anyname})", "    return;"]
    out += [ln for g in early for ln in g.load_lines()]
    out += [f"{ctype} {sums}[{pts.f}][{pts.cols}];"] + pts.loops([f"{cell} = {text(source, init)};"])
    point = [f"const int {lp.var} = {wr} - {pts.cy}{' - ' + str(d) if d > 0 else ' + ' + str(-d) if d < 0 else ''};",
             f"if ({lp.var} >= {lo} && {lp.var} < {hi})" + (" " + step[0] if step[0].startswith("{") else "")] + \
        (["    " + s for s in step] if not step[0].startswith("{") else step[1:])
    out += window[:-1] + ["    " + ln for ln in pts.loops(point)] + ["}"]
    words = row_stores(source, facts, model, tail, (acc, sums), after, dead if guards else "", (pts.f, pts.cols, pts.cy, pts.cx),
                       pts.decls, xbase, fresh_name)
    return out + (words if words is not None else pts.loops(([f"if {dead}", "    continue;"] if guards else []) + after))


def _pure(source: bytes, body: Node, acc: str) -> str:
    """Why the loop body could do more than add to `acc` and its own locals, or ''."""
    local = {text(source, c.child_by_field_name("declarator")) if c.type == "init_declarator" else text(source, c)
             for n in walk(body) if n.type == "declaration" for c in n.named_children if c.type in {"init_declarator", "identifier"}}
    local |= {text(source, n.child_by_field_name("initializer").named_children[0].child_by_field_name("declarator"))  # type: ignore[union-attr]
              for n in walk(body) if n.type == "for_statement" and n.child_by_field_name("initializer") is not None
              and n.child_by_field_name("initializer").type == "declaration"  # type: ignore[union-attr]
              and n.child_by_field_name("initializer").named_children[-1].type == "init_declarator"}  # type: ignore[union-attr]
    for n in walk(body):
        if n.type in _EXITS:
            return "the loop exits or skips (return, break, continue)"
        target = n.child_by_field_name("left") if n.type == "assignment_expression" else \
            n.child_by_field_name("argument") if n.type == "update_expression" else None
        if target is not None and (target.type != "identifier" or text(source, target) not in local | {acc}):
            return f"the loop writes {text(source, target)}: more than its sum and locals"
        if n.type == "call_expression" and "atomic" in text(source, n.child_by_field_name("function")):
            return "the loop calls an atomic"
    return ""


def _uniform_reads(source: bytes, facts: KernelFacts, model: KernelModel, st: Stencil, groups: list[Coefficients],
                   body: Node, var: str) -> str:
    """Why a read in the loop other than the window's and the coefficients' could fall outside its array for a point
    past the guards (those sums are computed too), or '': its index may use loop variables and sizes only."""
    taken = {(r.start, r.end) for r in st.arrays[0].reads} | {(a.start, a.end) for g in groups for a in g.reads}
    sizes = set(int_macros(source)) | {p.name for p in facts.params if not p.pointer}
    steps = {m.var for m in model.loops if body.start_byte <= m.start < body.end_byte} | {var}
    for a in model.accesses:
        if body.start_byte <= a.start < body.end_byte and (a.start, a.end) not in taken and \
                any(p is None or p.names - steps - sizes for p in a.index):
            return f"the loop reads {a.text} at a point's own index: a point past the guards could read outside"
    return ""
