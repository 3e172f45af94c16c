"""walk-registers: a thread's loop that walks an array along one axis keeps the values it will read again in registers.

A 3-D stencil whose threads march along z (`for (z ...) { c = (z * NY + y) * NX + x; ... u[c - P] ... u[c] ... u[c + P] }`)
reads u[c + P] at step z, as u[c] at step z + 1 and as u[c - P] at z + 2: three loads a step where one is new. Here
the reads of one array whose indices differ by whole steps of the loop (P = index(z + 1) - index(z), checked
numerically for random values of every other name, the loop body's index declarations substituted) become registers:
the first step loads them all, each later step loads only the one ahead and the registers rotate at the end of the
step. The array must not be written by the kernel (in an MEP every pointer parameter is its own buffer, as for
restrict-const), so the value read one step later is the same. Results are the original's bit for bit.

chunks=N splits the loop's range over gridDim.z (_walk_chunks.py: independent steps only); cols=V has each thread walk V
consecutive x points, the reads shared between them and loaded as V-wide words where aligned (_walk_cols.py). A hand
probe of heat3d_zloop (H200): chunks=4 cols=2 1.27x (85% of the copy floor), chunks=8 cols=4 block 32x8 1.20x, chunks=8
block 32x8 1.04x; either alone gains nothing (too few threads, or no shared loads).

Refused: no `for` loop stepping its variable by one, a body with branches, `?:`, `&&`, `||`, `continue`, `break`,
`return`, `goto` or nested loops (a step that skips the rotation), barriers, no array read at two or more offsets one
step apart (contiguous), an index reading a name the body assigns, a read array that the kernel writes."""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang import index_split as ix
from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts, idents
from s2s.lang.parsing import src

from ..common.index_steps import elem
from ..common.statements import BARRIERS, assigned, declares
from ..common.tree import fresh, indent_of, node_at, statements, walk
from ._walk_chunks import chunk_edits, step_columns
from ._walk_cols import cols_rewrite

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void heat(const float* u, float* v, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;
    for (int z = 1; z < nz - 1; z++) {
        int c = (z * ny + y) * nx + x;
        v[c] = u[c - nx * ny] + u[c] + u[c + nx * ny];
    }
}
"""
EXAMPLE_AFTER = """\
__global__ void heat(const float* u, float* v, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;
    float w0, w1, w2;
    bool first = true;
    for (int z = 1; z < nz - 1; z++) {
        int c = (z * ny + y) * nx + x;
        if (first) {
            w0 = u[c - nx * ny];
            w1 = u[c];
            first = false;
        }
        w2 = u[c + nx * ny];
        v[c] = w0 + w1 + w2;
        w0 = w1;
        w1 = w2;
    }
}
"""
MAX_WINDOW = 9
_BRANCHES = re.compile(r"\bif\b|\?|&&|\|\||\bcontinue\b|\bbreak\b|\breturn\b|\bgoto\b|\bfor\b|\bwhile\b|\bdo\b|\bswitch\b")
_STEP = re.compile(r"^\s*(?:(\w+)\s*\+\+|\+\+\s*(\w+)|(\w+)\s*\+=\s*1)\s*$")


@dataclass(frozen=True)
class WalkRegisters:
    name: ClassVar[str] = "walk-registers"
    WHY_IT_EXISTS: ClassVar[str] = "loops along one axis reading values again later (the zoo's heat3d_zloop)"
    priority: ClassVar[int] = 35  # after the stencil tilings (30s)
    # plain and ahead=1/2 measured 1.00x/0.93x/0.91x on heat3d_zloop (H200): only the chunked column forms are searched
    # (launch-config first: it refuses a kernel that reads blockIdx.z on its own, as the chunks do)
    space: ClassVar[tuple[str, ...]] = ("walk-registers{chunks=4 cols=2}",
                                        "launch-config{block=32x8},walk-registers{chunks=8 cols=4}")
    ahead: int = 0  # also load the value `ahead` steps ahead of the newest one: it is in flight while this step stores
    chunks: int = 1  # the loop's range split over gridDim.z (_walk_chunks.py)
    cols: int = 1  # consecutive x points a thread, values shared and loaded as words (_walk_cols.py)

    def applies(self, facts: KernelFacts) -> bool | str:
        if not 0 <= self.ahead <= 2 or not 1 <= self.chunks <= 64 or self.cols not in {1, 2, 4}:
            return "ahead must be 0-2, chunks 1-64, cols 1, 2 or 4"
        return True if any(lp.kind == "for_statement" for lp in facts.loops) else "no for loop"

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        kernel_text = source[facts.body_start:facts.body_end].decode("utf-8", "replace")
        if BARRIERS.search(kernel_text):
            return Refused("barriers, shared memory or warp collectives")
        written = {s.array for s in facts.subscripts if s.write}
        why = "no for loop stepping its variable by one"
        for n, lp in enumerate(facts.loops):
            m = _STEP.match(lp.step)
            if lp.kind != "for_statement" or m is None or (m.group(1) or m.group(2) or m.group(3)) != lp.var:
                continue
            out = self._loop(source, facts, n, written)
            if isinstance(out, Rewrite):
                return out
            why = out.reason
        return Refused(why)

    def _loop(self, source: bytes, facts: KernelFacts, n: int, written: set[str]) -> Rewrite | Refused:
        lp = facts.loops[n]
        node = node_at(source, facts, lp.start, lp.end, "for_statement")
        body = node.child_by_field_name("body") if node is not None else None
        if body is None or body.type != "compound_statement":
            return Refused(f"the loop over `{lp.var}` has no block body")
        inner = src(source, body)
        if _BRANCHES.search(re.sub(r"//.*|/\*.*?\*/", "", inner[1:-1], flags=re.S)):
            return Refused(f"the loop over `{lp.var}` branches, exits or nests a loop: a step could skip the rotation")
        if assigned(lp.var, inner):
            return Refused(f"`{lp.var}` is assigned in its loop")
        stmts = statements(body)
        local: dict[str, str] = {}
        changed: set[str] = set()
        for s in stmts:
            name = declares(source, s) if s.type == "declaration" else ""
            init = s.named_children[-1].child_by_field_name("value") if name else None
            if name and init is not None:
                local[name] = src(source, init)
            elif name:
                changed.add(name)
        changed |= {a for a in idents(inner) if assigned(a, inner) and a not in local}
        macros = ix.int_macros(source)
        reads: list[tuple[Node, str, str, int]] = []  # (node, array, index text, statement number)
        for k, s in enumerate(stmts):
            for sub in walk(s):
                if sub.type != "subscript_expression" or sub.parent is None:
                    continue
                head, idx = sub.child_by_field_name("argument"), sub.child_by_field_name("indices")
                if head is None or idx is None or head.type != "identifier" or src(source, head) in written:
                    continue
                if sub.parent.type == "assignment_expression" and sub.parent.child_by_field_name("left") == sub:
                    continue
                reads.append((sub, src(source, head), src(source, idx).strip()[1:-1].strip(), k))

        def expand(e: str) -> str:
            for _ in range(4):
                e = re.sub(r"(?<![\w.])(\w+)\b", lambda mm: f"({local[mm.group(1)]})" if mm.group(1) in local else mm.group(1), e)
            return e
        rng = random.Random(5)
        envs = [{**macros} for _ in range(4)]
        for env in envs:
            for name in {nm for _, _, e, _ in reads for nm in idents(expand(e))} - set(macros):
                env.setdefault(name, rng.randint(3, 997))
        for _, _, e, _ in reads:
            if idents(expand(e)) & changed:
                return Refused(f"the index `{e}` reads a name the loop body assigns")
        if self.cols > 1:
            assert node is not None
            return cols_rewrite(self.chunks, self.cols, self.ahead, source, facts, lp, node, body, stmts, written, expand,
                                envs, macros)
        columns = step_columns(reads, lp.var, expand, envs)
        best = max(columns.items(), key=lambda kv: len(kv[1]), default=None)
        if best is None:
            return Refused(f"no array read at two offsets one step of `{lp.var}` apart")
        arr, col = best
        lo, hi = min(col), max(col)
        if len(col) != hi - lo + 1 or len(col) > MAX_WINDOW:
            return Refused(f"`{arr}`'s reads along `{lp.var}` are not {MAX_WINDOW} or fewer contiguous steps")
        first_stmt = min(k for items in col.values() for _, _, k in items)
        later = {nm for s in stmts[first_stmt:] for nm in ([declares(source, s)] if s.type == "declaration" else [])}
        if any(idents(items[0][1]) & later for items in col.values()):
            return Refused("an index reads a name declared after the first read")
        ety = elem(source, facts, arr)
        if not ety:
            return Refused(f"the element type of `{arr}` is not known")
        count = len(col) + self.ahead
        regs = [fresh(facts, source, f"w{i}") for i in range(count)]
        regs = regs if len(set(regs)) == len(regs) else [f"{regs[0]}_{i}" for i in range(count)]
        flag = fresh(facts, source, "first")
        ind = indent_of(source, node.start_byte) if node is not None else ""
        sind = indent_of(source, stmts[first_stmt].start_byte)
        assert node is not None and body is not None
        pre, edits = "", list[Edit]()
        if self.chunks > 1:
            got = chunk_edits(source, facts, lp, node, body, stmts, expand, envs, self.chunks, facts.dialect)
            if isinstance(got, Refused):
                return got
            pre, edits = got
        edits.append(Edit(node.start_byte, node.start_byte, f"{pre}{ety} {', '.join(regs)};\n{ind}bool {flag} = true;\n{ind}"))
        bound = re.fullmatch(rf"\s*{re.escape(lp.var)}\s*(<=?)\s*(.+?)\s*", lp.cond)
        if self.ahead and (bound is None or idents(bound.group(2)) & (changed | set(local) | {lp.var})):
            return Refused(f"ahead={self.ahead} needs the loop condition `{lp.var} < BOUND` with a bound the body keeps")

        def at(m: int) -> str:
            """The load of offset m (m > hi: `m - hi` steps ahead, under the loop's condition there)."""
            if m <= hi:
                return f"{regs[m - lo]} = {arr}[{col[m][0][1]}];"
            a = m - hi
            assert bound is not None
            index = re.sub(rf"(?<![\w.]){re.escape(lp.var)}\b", f"({lp.var} + {a})", expand(col[hi][0][1]))
            return f"if ({lp.var} + {a} {bound.group(1)} {bound.group(2)}) {regs[m - lo]} = {arr}[{index}];"
        loads = [f"if ({flag}) {{"] + [f"    {at(m)}" for m in range(lo, hi + self.ahead)] + \
                [f"    {flag} = false;", "}", at(hi + self.ahead)]
        edits.append(Edit(stmts[first_stmt].start_byte, stmts[first_stmt].start_byte,
                          "\n".join(x if i == 0 else sind + x for i, x in enumerate(loads)) + "\n" + sind))
        for m, items in col.items():
            for sub, _, _ in items:
                edits.append(Edit(sub.start_byte, sub.end_byte, regs[m - lo]))
        last = stmts[-1]
        rotate = "".join(f"\n{sind}{regs[i]} = {regs[i + 1]};" for i in range(len(regs) - 1))
        edits.append(Edit(last.end_byte, last.end_byte, rotate))
        launch = LaunchChange(None, f"chunks-z:{self.chunks}") if self.chunks > 1 else None
        return Rewrite(tuple(sorted(edits, key=lambda e: e.start)), launch,
                       f"`{arr}` along `{lp.var}`: {len(regs)} registers, one load a step instead of {len(col)}"
                       + (f", {self.ahead} step(s) ahead" if self.ahead else "")
                       + (f", its range in {self.chunks} chunks over gridDim.z" if self.chunks > 1 else ""))
