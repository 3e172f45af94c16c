"""The strip form of triangular-solve-blocking ({strip=CB rows=R rpt=RPT}): a block owns CB columns for the whole solve.

Block (CB, R / RPT); thread (x, y) has column x of the strip and rows y*RPT .. y*RPT+RPT-1 of every R-row block. The
solved rows of the strip stay in a shared window `xs` of KS rows (as many as 48 KB of static shared memory holds
beside the partial sums, a multiple of R; rows past the window are read back from X in global memory): for each row
block, every thread sums its RPT rows' terms over the solved rows (k ascending, each solved element loaded once for
the RPT rows; the matrix row as float4 where each of the thread's rows starts 16-byte aligned, else one element at a
time: the same products in the same order either way), parks them in `part`, and after a barrier one thread per column
finishes the block's rows from registers (loops over the block fully unrolled: each row's solution subtracted at once
from the rows after it, right-looking, so the serial chain is one subtraction and the division a row; the block's
solutions go to X and to the window). Each element sums the same products in the same order as the original (k
ascending): the results are bit-identical.
"""
from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from s2s.lang.affine import Poly
from s2s.lang.edits import Refused
from s2s.lang.index_split import int_macros
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import ArrayAccess

from ..common.tree import fresh, text, walk
from ._substitution import block_lines, renamed

SHARED_BYTES = 48 * 1024  # static shared memory a block may declare without cudaFuncSetAttribute (a rewrite cannot call it)


@dataclass(frozen=True)
class SolveParts:
    """The pieces of the forward substitution that triangular-solve-blocking found on the kernel model."""
    source: bytes
    facts: KernelFacts
    i: str  # the row loop's variable
    k: str  # the inner loop's variable
    acc: str  # the accumulator
    inside: str  # the condition the column's thread runs under
    lower: str  # the rows' first (text)
    cond: Node  # the row loop's condition
    ity: str  # the row variable's type
    kty: str  # the inner variable's type
    ty: str  # the accumulator's type
    decl: Node  # the accumulator's declaration
    inner: Node  # the inner loop
    kval: Node  # the inner loop's first value
    kbody: Node  # its one statement
    after: tuple[Node, ...]  # the statements after it
    reads: tuple[ArrayAccess, ...]  # the reads inside the inner loop
    x: str  # the solved array
    xty: str  # its element type
    right: Node  # the right side of the solution's store
    span: Poly  # the number of rows (the row loop's bound less its first)


def _size(ty: str) -> int:
    return 8 if any(w in ty.split() for w in ("double", "long")) or "int64" in ty else 4


def _node(top: Node, a: ArrayAccess) -> Node:
    return next(n for n in walk(top) if n.start_byte == a.start and n.end_byte == a.end)


def strip_lines(p: SolveParts, cb: int, rows: int, rpt: int) -> list[str] | Refused:
    """The kernel's statements after the column's declaration, or why the strip form does not fit."""
    if p.facts.dialect != "cuda":
        return Refused("the strip form is written for CUDA only (float4 loads, 48 KB static shared memory)")
    if p.ty.replace("const ", "").strip() != p.xty.strip():
        return Refused(f"the strip form keeps solutions in the accumulator's type: {p.ty} is not {p.x}'s {p.xty}")
    part_bytes = rows * cb * _size(p.ty)
    ks = (SHARED_BYTES - part_bytes) // (cb * _size(p.xty)) // rows * rows
    span, macros = p.span, int_macros(p.source)
    for nm in span.names & set(macros):
        span = span.subst(nm, Poly.const(macros[nm]))
    if span.constant() is not None:  # a known size: no larger window than the rows (the occupancy shared memory allows)
        ks = min(ks, -(-span.constant() // rows) * rows)  # type: ignore[operator]
    if ks < rows:
        return Refused(f"a strip of {cb} columns with {rows}-row blocks leaves no room for one row block of solutions in "
                       f"{SHARED_BYTES // 1024} KB of static shared memory ({part_bytes} bytes of partial sums)")
    src, i, k, acc, lo = p.source, p.i, p.k, p.acc, p.lower
    n = {nm: fresh(p.facts, src, nm) for nm in ("row", "part", "xs", "i0", "kw", "al")}
    row, part, xs, i0, kw = n["row"], n["part"], n["xs"], n["i0"], n["kw"]
    tx = "threadIdx.x"
    owns = [fresh(p.facts, src, f"{i}_row{j}") for j in range(rpt)]
    accs = [fresh(p.facts, src, f"{acc}{j}") for j in range(rpt)]
    xv = [fresh(p.facts, src, f"x{q}") for q in range(4)]
    lv = [fresh(p.facts, src, f"l{j}") for j in range(rpt)]
    off = (lambda e: e) if lo == "0" else (lambda e: f"{e} - {lo}") if lo.isidentifier() or lo.isdigit() else (lambda e: f"{e} - ({lo})")
    kend = str(ks) if lo == "0" else f"{lo} + {ks}" if lo.isidentifier() or lo.isdigit() else f"({lo}) + {ks}"
    xreads = [a for a in p.reads if a.array == p.x and p.kbody.start_byte <= a.start and a.end <= p.kbody.end_byte]
    others = [a for a in p.reads if a.array != p.x and p.kbody.start_byte <= a.start and a.end <= p.kbody.end_byte]
    lp = p.facts.param(others[0].array) if len(others) == 1 else None
    vec = (lp is not None and lp.pointer and lp.base_type == "float" and others[0].flat is not None
           and others[0].flat.coeff(k) == Poly.const(1) and rows % 4 == 0 and len(xreads) == 1)

    def term(j: int, x: str | None, q: int | None = None) -> str:  # the j-th row's term; x: the solved element's text
        swaps = tuple((a.start, a.end, x) for a in xreads if x is not None)
        if q is not None:
            swaps += ((others[0].start, others[0].end, f"{lv[j]}.{'xyzw'[q]}"),)
        return renamed(src, p.kbody, {i: owns[j], acc: accs[j], **({k: f"({k} + {q})"} if q else {})}, swaps)

    def loop(start: str, end: str, step: int, body: list[str]) -> list[str]:
        return [f"for ({p.kty} {k} = {start}; {k} < {end}; {k}{' += 4' if step == 4 else '++'}) {{", *("    " + b for b in body), "}"]

    scalar = [*loop(lo, kw, 1, [f"const {p.xty} {xv[0]} = {xs}[{off(k)}][{tx}];", *(term(j, xv[0]) for j in range(rpt))]),
              *loop(kw, i0, 1, [term(j, None) for j in range(rpt)])]
    update = scalar
    if vec:
        lnode, xnode = _node(p.kbody, others[0]), _node(p.kbody, xreads[0])
        at = [renamed(src, lnode, {i: owns[j], k: lo}) for j in range(rpt)]
        loads = [f"const float4 {lv[j]} = *reinterpret_cast<const float4*>(&{renamed(src, lnode, {i: owns[j]})});" for j in range(rpt)]
        terms = [term(j, xv[q], q) for q in range(4) for j in range(rpt)]
        window = [f"const {p.xty} {xv[q]} = {xs}[{off(k)}{f' + {q}' if q else ''}][{tx}];" for q in range(4)]
        glob = [f"const {p.xty} {xv[q]} = {renamed(src, xnode, {k: f'({k} + {q})'} if q else {})};" for q in range(4)]
        aligned = " | ".join(f"(size_t)&{a}" for a in at)
        update = [f"if ((({aligned}) & 15) == 0) {{", *("    " + ln for ln in loop(lo, kw, 4, [*window, *loads, *terms])),
                  *("    " + ln for ln in loop(kw, i0, 4, [*glob, *loads, *terms])), "} else {",
                  *("    " + ln for ln in scalar), "}"]
    head = []
    for j, own in enumerate(owns):
        head += [f"{p.ity} {own} = {i0} + {row} * {rpt}{f' + {j}' if j else ''};", f"if (!({renamed(src, p.cond, {i: own})}))",
                 f"    {own} = {i0};"]
    phase1 = [*head, f"if ({p.inside}) {{",
              *(ln for j in range(rpt) for ln in block_lines(src, p.decl, 1, renamed(src, p.decl, {i: owns[j], acc: accs[j]}))),
              f"    const {p.ity} {kw} = {i0} < {kend} ? {i0} : {kend};", *("    " + ln for ln in update),
              *(f"    {part}[{row} * {rpt} + {j}][{tx}] = {a};" for j, a in enumerate(accs)), "}"]
    sv, xf, jj, ii = (fresh(p.facts, src, nm) for nm in ("sv", "xf", "jj", "ii"))
    value = p.decl.child_by_field_name("declarator").child_by_field_name("value")  # type: ignore[union-attr]
    stored = renamed(src, p.decl, {}, ((value.start_byte, value.end_byte, f"{sv}[{jj}]"),))  # type: ignore[union-attr]
    keep = ((p.right.start_byte, p.right.end_byte, f"{xf} = {text(src, p.right)}"),)
    later = renamed(src, p.kbody, {acc: f"{sv}[{ii}]", i: f"({i0} + {ii})", k: i}, tuple((a.start, a.end, xf) for a in xreads))
    s = "    "
    finish = [f"{p.ty} {sv}[{rows}];", "#pragma unroll", f"for (int {jj} = 0; {jj} < {rows}; {jj}++)", f"{s}{sv}[{jj}] = {part}[{jj}][{tx}];",
              "#pragma unroll", f"for (int {jj} = 0; {jj} < {rows}; {jj}++) {{", f"{s}const {p.ity} {i} = {i0} + {jj};",
              f"{s}if ({text(src, p.cond)}) {{", *block_lines(src, p.decl, 2, stored), f"{s * 2}{p.xty} {xf};",
              *(ln for st in p.after for ln in block_lines(src, st, 2, renamed(src, st, {}, keep))),
              f"{s * 2}if ({off(i)} < {ks})", f"{s * 3}{xs}[{off(i)}][{tx}] = {xf};", f"{s * 2}#pragma unroll",
              f"{s * 2}for (int {ii} = {jj} + 1; {ii} < {rows}; {ii}++)", f"{s * 3}if ({renamed(src, p.cond, {i: f'{i0} + {ii}'})})",
              f"{s * 4}{later}", f"{s}}}", "}"]
    return [f"const int {row} = threadIdx.y;", f"__shared__ {p.xty} {xs}[{ks}][{cb}];",
            f"__shared__ {p.ty} {part}[{rows}][{cb}];",
            f"for ({p.ity} {i0} = {lo}; {renamed(src, p.cond, {i: i0})}; {i0} += {rows}) {{", *(s + ln for ln in phase1), f"{s}__syncthreads();",
            f"{s}if ({row} == 0 && ({p.inside})) {{", *(s * 2 + ln for ln in finish), f"{s}}}", f"{s}__syncthreads();", "}"]
