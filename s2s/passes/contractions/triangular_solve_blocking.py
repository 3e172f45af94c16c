"""triangular-solve-blocking: a forward substitution with one thread per right-hand side shares each column among a block.

`c = blockIdx.x*blockDim.x + threadIdx.x; guard; for (i) { acc = ..B[i][c]..; for (k from the first row; k < i) acc -= L(i, k) *
X[k][c]; X[i][c] = f(acc, L(i, i)); }` runs one O(N^2) chain per column: 8,192 columns are 8,192 threads on a GPU that
holds 270,000. Read from the kernel model: X is the one array written, at (i, c), column stride one, and read at (k, c)
in the inner loop; every other array is never written and reads no column but c's own. Then `rows` threads share each
column: for each block of `rows` rows, every thread sums its row's terms over the rows already solved (k below the
block; X read coalesced across the `cols` columns, L broadcast), parks the partial sum in shared memory, and after a
barrier one thread per column finishes the block's rows in order (the terms of the rows inside the block, then the
statements after the inner loop). Each element sums the same products in the same order. The guard becomes a
condition, so every thread reaches the barriers. Refused: other writes, a second thread axis, a column stride not one.
`per` > 1: each thread sums `per` rows in one loop over k (the solved element loaded once for all); not in the search's
space, since the model cannot read its clamped rows (a row past the end becomes the block's first, never read back).
`strip` > 0: the strip form (s2s/passes/contractions/_strip_solve.py): a block of `strip` columns x rows/rpt threads keeps its
columns' solutions in shared memory for the whole solve, each thread summing `rpt` rows of each `rows`-row block.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.affine import Poly
from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.thread_loop import thread_loop
from ..common.tree import fresh, indent_of, statements, text, walk
from ._strip_solve import SolveParts, strip_lines
from ._substitution import block_lines, check_memory, own_rows, renamed

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void trsm(const float* L, float* B, int n, int nrhs)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nrhs)
        return;
    for (int i = 0; i < n; i++) {
        float s = B[i * nrhs + c];
        for (int k = 0; k < i; k++)
            s -= L[i * n + k] * B[k * nrhs + c];
        B[i * nrhs + c] = s / L[i * n + i];
    }
}
"""
EXAMPLE_AFTER = """\
__global__ void trsm(const float* L, float* B, int n, int nrhs)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = threadIdx.y;
    __shared__ float part[8][32];
    __shared__ float sol[8][32];
    for (int i0 = 0; i0 < n; i0 += 8) {
        int i_row = i0 + row;
        if ((!(c >= nrhs)) && (i_row < n)) {
            float s = B[i_row * nrhs + c];
            for (int k = 0; k < i0; k++)
                s -= L[i_row * n + k] * B[k * nrhs + c];
            part[row][threadIdx.x] = s;
        }
        __syncthreads();
        if (row == 0 && (!(c >= nrhs))) {
            for (int i = i0; i < i0 + 8; i++) {
                if (!(i < n))
                    break;
                float s = part[i - i0][threadIdx.x];
                for (int k = i0; k < i; k++)
                    s -= L[i * n + k] * sol[k - i0][threadIdx.x];
                B[i * nrhs + c] = sol[i - i0][threadIdx.x] = s / L[i * n + i];
            }
        }
        __syncthreads();
    }
}
"""
_JUMP = re.compile(r"\b(return|break|continue|goto|__syncthreads|barrier|atomic\w*|atom_\w+)\b")


@dataclass(frozen=True)
class TriangularSolveBlocking:
    name: ClassVar[str] = "triangular-solve-blocking"
    WHY_IT_EXISTS: ClassVar[str] = "TRSM-like forward substitution, a thread per right-hand side (the zoo's trsm_cols)"
    priority: ClassVar[int] = 8  # structural, and the only pass for this shape: first (the cost model ranks it first too)
    # the strip forms first: the H200 probe's best on the zoo's trsm_cols (hand strips 230 and 234 us, rows=16 516 us)
    space: ClassVar[tuple[str, ...]] = ("triangular-solve-blocking{strip=32 rows=64 rpt=8}", "triangular-solve-blocking{strip=32 rows=32 rpt=4}",
                                        "triangular-solve-blocking", "triangular-solve-blocking{rows=16}", "triangular-solve-blocking{rows=32}")
    rows: int = 8  # threads per column (block.y), the rows of one diagonal block
    cols: int = 32  # columns per block (block.x)
    per: int = 1  # rows per thread: the diagonal block has rows x per rows; the solved element is loaded once for all
    strip: int = 0  # > 0: the strip form, a block of `strip` columns keeping their solutions in shared memory
    rpt: int = 1  # the strip form's rows per thread (a block has strip x rows/rpt threads)

    def applies(self, facts: KernelFacts) -> bool | str:
        if self.strip and (self.strip % 16 or self.rpt < 1 or self.rows % self.rpt or not 32 <= self.strip * self.rows // self.rpt <= 1024):
            return "strip must be a multiple of 16, rows a multiple of rpt, 32 to 1024 threads (strip x rows/rpt)"
        if not self.strip and (self.cols % 16 or self.rows < 2 or not 64 <= self.cols * self.rows <= 1024 or self.per not in {1, 2, 4}):
            return "cols must be a multiple of 16, rows at least 2, 64 to 1024 threads, per 1, 2 or 4"
        if facts.dims != 1 or not facts.var_for("x"):
            return "needs one thread index along x (a second thread dimension is not a column per thread)"
        if facts.shared or facts.atomics:
            return "kernel uses shared memory or atomics"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        tl = thread_loop(source, facts, "one loop over the rows", alone=True)
        if isinstance(tl, Refused):
            return tl
        model, c, inside, end, outer, lp, init, cond, body = tl.model, tl.var, tl.inside, tl.end, tl.loop, tl.lp, tl.init, tl.cond, tl.body
        head = tl.decl  # the column's declaration: the new code follows it
        if body.type != "compound_statement" or lp.upper is None:
            return Refused("the row loop must declare its variable, count it up by one to a bound and have a block body")
        i = lp.var
        if (lp.lower is None or c in lp.lower.names) or c in lp.upper.names:
            return Refused(f"the rows' range must be the same for every thread (it uses {c})")
        parts = statements(body)
        loops = [n for n, s in enumerate(parts) if s.type == "for_statement"]
        if len(loops) != 1 or loops[0] != 1 or parts[0].type != "declaration":
            return Refused(f"the body over {i} must be an accumulator's declaration, one loop, then the statements that store")
        decl, inner, after = parts[0], parts[1], parts[2:]
        kl = next((x for x in model.loops if x.start == inner.start_byte), None)
        kinit, kcond = inner.child_by_field_name("initializer"), inner.child_by_field_name("condition")
        kval = kinit.child_by_field_name("declarator") if kinit is not None and kinit.type == "declaration" else None
        kval = kval.child_by_field_name("value") if kval is not None else None
        if kl is None or kl.step != 1 or kval is None or kcond is None or kl.upper != Poly.name(i) or kl.lower != lp.lower:
            return Refused(f"the inner loop must run from the rows' first ({lp.lower}) up to {i}, by one")
        k = kl.var
        dd = decl.child_by_field_name("declarator") if len(decl.children_by_field_name("declarator")) == 1 else None
        acc = text(source, dd.child_by_field_name("declarator")) if dd is not None and dd.type == "init_declarator" else ""
        value = dd.child_by_field_name("value") if dd is not None else None
        red = [r for r in model.reductions if inner.start_byte <= r.start and r.end <= inner.end_byte]
        kbody = inner.child_by_field_name("body")
        while kbody is not None and kbody.type == "compound_statement" and len(statements(kbody)) == 1:
            kbody = statements(kbody)[0]
        if not acc or value is None or kbody is None or kbody.type != "expression_statement" or len(red) != 1 \
                or red[0].target != acc or red[0].over != k or red[0].into != "local":
            return Refused(f"the inner loop must be one accumulation into the local {acc or 'declared before it'} over {k}")
        if any(s.type not in {"expression_statement", "declaration"} or _JUMP.search(text(source, s)) for s in after) \
                or _JUMP.search(text(source, body)):
            return Refused("the statements after the inner loop must be declarations or expressions without jumps or barriers")
        why = check_memory(model.accesses, outer.start_byte, outer.end_byte, (inner.start_byte, inner.end_byte), c, i, k)
        if why:
            return Refused(why)
        reads = [a for a in model.accesses if inner.start_byte <= a.start and a.end <= inner.end_byte and not a.write]
        w = next(a for a in model.accesses if a.write)
        stores = [x for s in after for x in walk(s) if x.type == "assignment_expression"]
        store = next((x for x in stores if (x.child_by_field_name("left") or x).start_byte == w.start), None)
        right = store.child_by_field_name("right") if store is not None else None
        xp = facts.param(w.array)
        if store is None or right is None or text(source, store.child_by_field_name("operator")) != "=" or xp is None:
            return Refused(f"{w.text}: the solved element must be stored by a plain assignment")
        ty, ity = text(source, decl.child_by_field_name("type")), text(source, init.child_by_field_name("type"))
        pad, step = indent_of(source, head.start_byte), "    "
        if self.strip:
            kty = text(source, kinit.child_by_field_name("type"))  # type: ignore[union-attr]
            got = strip_lines(SolveParts(source, facts, i, k, acc, inside, text(source, init.child_by_field_name("declarator").child_by_field_name("value")),  # type: ignore[union-attr]
                                         cond, ity, kty, ty, decl, inner, kval, kbody, tuple(after), tuple(reads), w.array,
                                         xp.base_type.replace("const ", ""), right, lp.upper - lp.lower), self.strip, self.rows, self.rpt)
            if isinstance(got, Refused):
                return got
            return Rewrite((Edit(head.end_byte, end, "\n" + "\n".join(pad + ln for ln in got)),), LaunchChange((self.strip, self.rows // self.rpt, 1), "same-coverage"),
                           f"strip of {self.strip} columns kept in shared memory, {self.rows}-row blocks, {self.rpt} rows a thread")
        n = {nm: fresh(facts, source, nm) for nm in ("row", "part", "sol", "i0", f"{i}_row")}
        cl, own, i0 = facts.dialect == "opencl", n[f"{i}_row"], n["i0"]
        tx, ty_ = ("get_local_id(0)", "get_local_id(1)") if cl else ("threadIdx.x", "threadIdx.y")
        sync = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);" if cl else "__syncthreads();"
        lower = text(source, init.child_by_field_name("declarator").child_by_field_name("value"))  # type: ignore[union-attr]
        kright = kcond.child_by_field_name("right") or kcond
        first = renamed(source, inner, {i: own}, ((kright.start_byte, kright.end_byte, i0),))  # the thread's own row, k below the block
        solved = tuple((a.start, a.end, f"{n['sol']}[{k} - {i0}][{tx}]") for a in reads if a.array == w.array)
        second = renamed(source, inner, {}, ((kval.start_byte, kval.end_byte, i0), *solved))  # the block's rows from shared memory
        stored = renamed(source, decl, {}, ((value.start_byte, value.end_byte, f"{n['part']}[{i} - {i0}][{tx}]"),))
        keep = ((right.start_byte, right.end_byte, f"{n['sol']}[{i} - {i0}][{tx}] = {text(source, right)}"),)
        space = "__local" if cl else "__shared__"
        rows = self.rows * self.per
        phase1 = [f"{ity} {own} = {i0} + {n['row']};", f"if (({inside}) && ({renamed(source, cond, {i: own})})) {{",
                  *block_lines(source, decl, 1, renamed(source, decl, {i: own})), *block_lines(source, inner, 1, first),
                  f"{step}{n['part']}[{n['row']}][{tx}] = {acc};", "}"]
        if self.per > 1:
            owns, accs = [fresh(facts, source, f"{i}_row{j}") for j in range(self.per)], [fresh(facts, source, f"{acc}{j}") for j in range(self.per)]
            phase1 = own_rows(source, (decl, inner, kright, kbody, cond), i, acc, i0, inside, f"{n['part']}[{n['row']} + {self.rows} * {{0}}][{tx}] = {{1}};",
                              owns, accs, self.rows, ity, n["row"])
        lines = [f"const int {n['row']} = {ty_};", f"{space} {ty} {n['part']}[{rows}][{self.cols}];",
                 f"{space} {xp.base_type.replace('const ', '')} {n['sol']}[{rows}][{self.cols}];",
                 f"for ({ity} {i0} = {lower}; {renamed(source, cond, {i: i0})}; {i0} += {rows}) {{",
                 *(step + ln for ln in phase1), f"{step}{sync}",
                 f"{step}if ({n['row']} == 0 && ({inside})) {{", f"{step * 2}for ({ity} {i} = {i0}; {i} < {i0} + {rows}; {i}++) {{",
                 f"{step * 3}if (!({text(source, cond)}))", f"{step * 4}break;",
                 *block_lines(source, decl, 3, stored), *block_lines(source, inner, 3, second),
                 *(ln for s in after for ln in block_lines(source, s, 3, renamed(source, s, {}, keep))), f"{step * 2}}}", f"{step}}}", f"{step}{sync}", "}"]
        edit = Edit(head.end_byte, end, "\n" + "\n".join(pad + ln for ln in lines))
        return Rewrite((edit,), LaunchChange((self.cols, self.rows, 1), "same-coverage"),
                       f"{self.cols} columns x {self.rows} threads a block, {rows} rows: the terms below each row block in parallel, then its diagonal block")
