"""A per-thread reduction read off the kernel model: one thread per output that sums over a loop.

`i = blockIdx.x*blockDim.x + threadIdx.x; [b = blockIdx.y*blockDim.y + threadIdx.y;] guard; statements; for (k) ACC op= TERM(k);
statements`, where ACC is a
local declared before the loop or an element of global memory indexed without k (`y[i] = 0; for (j) y[i] += A[i*n+j]*x[j]`).
The model also says how the term's memory is laid out: `k_unit` when k is the unit-stride index of some operand
(a row walk: lanes should split k), `i_unit` when neighbouring threads already read neighbouring elements (a
column walk: keep the threads, split k across a second block dimension).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .kernel_facts import THREAD_BUILTIN, idents
from .kernel_model import model_and_body
from .parsing import src

_JUMP = re.compile(r"\b(return|break|continue|goto|__syncthreads|barrier|atomic\w*|atom_\w+)\b")


@dataclass(frozen=True)
class ReductionLoop:
    var: str  # the thread's output index
    k: str
    init: tuple[int, int]  # the loop's initial value (bytes)
    upper: str  # the loop's condition, C text
    target: str
    op: str  # "+=", "-=", "= x +"
    target_decl: bool  # a local declared before the loop
    statement: tuple[int, int]
    target_spans: tuple[tuple[int, int], ...]
    mapping: tuple[int, int]  # the declaration of var (and of the y index after it)
    value: tuple[int, int]  # its initializer
    inside: str  # the guard's condition for a thread that computes
    rest: tuple[int, int]  # guard .. end of the last statement
    before: tuple[tuple[int, int, bool], ...]  # (start, end, is a declaration)
    after: tuple[tuple[int, int], ...]
    k_unit: bool
    i_unit: bool
    second: str | None  # a y index declared after var (lanes only: splits mode takes threadIdx.y)
    indent: str


def find_reduction_loop(source: bytes, dialect: str, name: str | None = None) -> ReductionLoop | str:
    got = model_and_body(source, dialect, name)
    if got is None:
        return "no kernel found"
    model, body = got
    t = lambda n: src(source, n) if n is not None else ""  # noqa: E731
    maps = {m.axis: m for m in model.mapping if m.kind == "global"}
    if "x" not in maps or not maps["x"].offset.is_zero or len(model.mapping) != len(maps) or set(maps) - {"x", "y"}:
        return "needs one thread index along x, without offset, and at most one other, along y"
    v, w = maps["x"].var, maps["y"].var if "y" in maps else None
    stmts = [c for c in body.named_children if c.type != "comment"]
    second = [w] if w is not None else []  # a y index (a batch, a second output axis) declared right after v
    n = 1 + len(second)
    heads = [next((s for s in stmts[:n] if s.type == "declaration" and x in idents(t(s).split("=")[0])), None) for x in [v, *second]]
    if len(stmts) < n + 1 or None in heads or len(set(map(id, heads))) != n or any(THREAD_BUILTIN.search(t(s)) for s in stmts[n:]):
        return f"the kernel must begin with the declaration of {' and '.join([v, *second])} and use thread indices nowhere else"
    d = heads[0].child_by_field_name("declarator")  # type: ignore[union-attr]
    value = d.child_by_field_name("value") if d is not None and d.type == "init_declarator" else None
    guard = stmts[n]
    g = next((x for x in model.guards if x.start == guard.start_byte), None)
    if value is None or g is None or v not in dict(g.upper) or guard.child_by_field_name("alternative") is not None:
        return f"needs a guard bounding {v} right after its declaration"
    if g.kind == "block":
        cons = guard.child_by_field_name("consequence")
        rest = [c for c in cons.named_children if c.type != "comment"] if cons is not None and cons.type == "compound_statement" else []
        inside, end = g.condition.strip(), guard.end_byte
        if len(stmts) != n + 1:
            return "nothing may follow the guarded block"
    else:
        rest, inside, end = stmts[n + 1:], f"!({g.condition.strip()})", stmts[-1].end_byte
    loops = [i for i, s in enumerate(rest) if s.type == "for_statement"]
    if len(loops) != 1 or len(model.loops) != 1:
        return "needs exactly one loop, a for loop, after the guard"
    loop, lp = rest[loops[0]], model.loops[0]
    before, after = rest[: loops[0]], rest[loops[0] + 1:]
    if any(_JUMP.search(t(s)) or s.type not in {"declaration", "expression_statement"} for s in before + after):
        return "the statements around the loop must be declarations or expressions without jumps, barriers or atomics"
    init = loop.child_by_field_name("initializer")
    ival = init.child_by_field_name("declarator") if init is not None and init.type == "declaration" else None
    ival = ival.child_by_field_name("value") if ival is not None else None
    cond = loop.child_by_field_name("condition")
    if lp.step != 1 or ival is None or cond is None or not re.fullmatch(rf"{lp.var}\s*<=?\s*[^<>=]+", t(cond).strip()):
        return "the loop must declare its variable and count it up by one to a bound"
    stmt = loop.child_by_field_name("body")
    while stmt is not None and stmt.type == "compound_statement" and len(stmt.named_children) == 1:
        stmt = stmt.named_children[0]
    red = next((r for r in model.reductions if stmt is not None and r.start >= stmt.start_byte and r.end <= stmt.end_byte), None)
    if stmt is None or stmt.type != "expression_statement" or red is None or red.over != lp.var:
        return f"the loop body must be one accumulation over {lp.var} (ACC += ...)"
    inner = [a for a in model.accesses if stmt.start_byte <= a.start and a.end <= stmt.end_byte]
    tgt = [a for a in inner if a.text.replace(" ", "") == red.target.replace(" ", "")]
    written = {a.array for s in before for a in model.accesses if s.start_byte <= a.start and a.end <= s.end_byte and a.write}
    if written & {a.array for a in inner if a not in tgt}:
        return "the statements before the loop write memory the loop reads"
    if tgt and tgt[0].depends_on(lp.var) or (tgt and any(x.write and x not in tgt for x in inner)):
        return "the accumulator must be one element the loop does not index by its variable"
    decl = any(s.type == "declaration" and re.search(rf"\b{re.escape(red.target)}\s*=", t(s)) for s in before)
    if not tgt and not decl:
        return f"the accumulator {red.target} must be declared with a value before the loop"
    spans = tuple((a.start, a.end) for a in tgt) if tgt else tuple(
        (m.start() + stmt.start_byte, m.end() + stmt.start_byte) for m in re.finditer(rf"\b{re.escape(red.target)}\b", t(stmt)))
    if len(spans) != (2 if red.op == "= x +" else 1):
        return "the accumulated term reads the accumulator"
    declared = {x for s in before if s.type == "declaration" for x in idents(t(s).split("=")[0])} - {red.target}
    if idents(t(stmt)) & declared:
        return "the accumulated term uses a local declared before the loop"
    reads = [a for a in inner if a not in tgt and a.affine]
    k_unit = any(a.index[-1] is not None and a.index[-1].coeff(lp.var).constant() == 1 for a in reads)
    i_unit = all(a.pattern in {"coalesced", "uniform"} for a in reads) and any(a.depends_on(v) for a in reads)
    line = source.rfind(b"\n", 0, stmts[0].start_byte) + 1
    return ReductionLoop(
        v, lp.var, (ival.start_byte, ival.end_byte), t(loop.child_by_field_name("condition")), red.target, red.op, decl,
        (stmt.start_byte, stmt.end_byte), spans, (stmts[0].start_byte, stmts[n - 1].end_byte), (value.start_byte, value.end_byte),
        inside, (guard.start_byte, end), tuple((s.start_byte, s.end_byte, s.type == "declaration") for s in before),
        tuple((s.start_byte, s.end_byte) for s in after), k_unit, i_unit, w,
        re.match(rb"[ \t]*", source[line:]).group(0).decode(),  # type: ignore[union-attr]
    )
