"""row-coarsen: a thread computes a whole output row of a small product, the row length D a compile-time constant.

The shape: a 1-D index `t = blockIdx.x * blockDim.x + threadIdx.x`, a column `c = t % D`, every other use of `t` a
division `t / E` with E a multiple of D (the row, the batch), and one sum `s = init; for (k ...) s += EXPR; OUT[i] = s;`
(under an `if` or after `if (...) return;` exits that read no column). One thread per output loads the operand that the
row shares (`a[r * D + k]`) once per output; here the thread keeps the D sums of its row in registers, the loop over k
runs once for all of them and loads that operand once. With `vec=4` the reads whose index steps by one element with c
(`b[k * D + c]`) and the row's store are float4 words: their index at c = 0 is proven a multiple of 4 (evaluated for
random values of every other name), the arrays' first addresses are checked at run time (else the scalar form runs).
Each output's sum is formed in the original order: the results are the original's bit for bit. The grid shrinks by D
(launch rule coarsen-x).

Refused: no such index or column, a divisor of t that D does not divide, a column or bare t in the guard or before the
sum, more or other statements than the sum, an accumulator read in its own loop, D over 32 (registers), barriers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang import index_split as ix
from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.parsing import src

from ..common.index_steps import constant, word
from ..common.statements import BARRIERS, assigned, declares, global_index, returns_only
from ..common.tree import body_node, fresh, indent_of, statements, text
from ._row_words import vector_lines

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
#define D 8
__global__ void bmm(const float* A, const float* B, float* C, int batch)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int b = t / (D * D);
    int r = (t / D) % D;
    int c = t % D;
    if (b < batch) {
        float s = 0.0f;
        for (int k = 0; k < D; k++)
            s += A[b * D * D + r * D + k] * B[b * D * D + k * D + c];
        C[b * D * D + r * D + c] = s;
    }
}
"""
EXAMPLE_AFTER = """\
#define D 8
__global__ void bmm(const float* A, const float* B, float* C, int batch)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int b = row / 8;
    int r = (row) % D;
    if (b < batch) {
        float s[8];
        #pragma unroll
        for (int c = 0; c < 8; ++c) s[c] = 0.0f;
        if (((unsigned long long)B & 15) == 0 && ((unsigned long long)C & 15) == 0) {
            for (int k = 0; k < D; k++) {
                #pragma unroll
                for (int c = 0; c < 8; c += 4) {
                    float4 v0 = *(const float4*)&B[b * D * D + k * D + c];
                    s[c + 0] += A[b * D * D + r * D + k] * v0.x;
                    s[c + 1] += A[b * D * D + r * D + k] * v0.y;
                    s[c + 2] += A[b * D * D + r * D + k] * v0.z;
                    s[c + 3] += A[b * D * D + r * D + k] * v0.w;
                }
            }
            #pragma unroll
            for (int c = 0; c < 8; c += 4)
                *(float4*)&C[b * D * D + r * D + c] = make_float4(s[c + 0], s[c + 1], s[c + 2], s[c + 3]);
        } else {
            for (int k = 0; k < D; k++) {
                #pragma unroll
                for (int c = 0; c < 8; ++c)
                    s[c] += A[b * D * D + r * D + k] * B[b * D * D + k * D + c];
            }
            #pragma unroll
            for (int c = 0; c < 8; ++c)
                C[b * D * D + r * D + c] = s[c];
        }
    }
}
"""
MAX_ROW = 32
_SUM = re.compile(r"^(\w+)\s*\+=\s*(.+?);$", re.S)
_STORE = re.compile(r"^(\w+)\s*\[(.+)\]\s*=\s*(\w+)\s*;$", re.S)


@dataclass(frozen=True)
class RowCoarsen:
    name: ClassVar[str] = "row-coarsen"
    WHY_IT_EXISTS: ClassVar[str] = "small batched products of a compile-time row length computed one thread an output"
    priority: ClassVar[int] = 10  # a batched small product's first step: no other pass reaches its loads
    # H200 (bench/results/gpu-plans): with 128-thread blocks 1.54x, default 1.48x, vec=1 0.76x (left out)
    space: ClassVar[tuple[str, ...]] = ("row-coarsen,launch-config{block=128}", "row-coarsen", "row-coarsen{kvec=1}")
    vec: int = 4  # 4: float4 words where proven; 1: scalar
    kvec: bool = False  # also the row's shared operand in float4 words along k (_row_words.vector_lines)

    def applies(self, facts: KernelFacts) -> bool | str:
        if self.vec not in {1, 4}:
            return "vec must be 1 or 4"
        if facts.dialect == "opencl":
            return "CUDA/HIP only (the global size would have to shrink by the row)"
        return True if facts.var_for("x") else "no global index along x"

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        body = body_node(source, facts)
        if BARRIERS.search(src(source, body)) or facts.atomics:
            return Refused("barriers, shared memory, warp collectives or atomics: threads of a block must stay in step")
        stmts = statements(body)
        head = stmts[0] if stmts else None
        t = declares(source, head) if head is not None and head.type == "declaration" else ""
        init = head.named_children[-1] if head is not None and t else None
        value = init.child_by_field_name("value") if init is not None else None
        if head is None or not t or value is None or not global_index(src(source, value), "x"):
            return Refused("the body does not start with `int t = blockIdx.x * blockDim.x + threadIdx.x;`")
        macros = ix.int_macros(source)
        i = next((k for k in range(1, len(stmts)) if stmts[k].type != "declaration"), len(stmts))
        decls = stmts[1:i]
        found = [(d, m) for d in decls if (m := re.fullmatch(rf"\w+\s+\w+\s*=\s*\(?\s*{t}\s*\)?\s*%\s*(.+?)\s*;", src(source, d), re.S))]
        if len(found) != 1:
            return Refused(f"no single column `c = {t} % D` among the declarations after the index")
        cols, col, row_len = [found[0][0]], declares(source, found[0][0]), constant(found[0][1].group(1), macros)
        if row_len is None or not 2 <= row_len <= MAX_ROW or row_len % self.vec:
            return Refused(f"the row length of `{col}` is not a compile-time constant 2-{MAX_ROW} (a multiple of {self.vec})")
        row = fresh(facts, source, "row")
        rest = stmts[i:]
        # the guard: `if (...) return;` exits, then the sum; or one `if (...) { sum }` without else
        exits = []
        while rest and rest[0].type == "if_statement" and returns_only(source, rest[0]):
            exits.append(rest.pop(0))
        work: list[Node] = rest
        guard = None
        if len(rest) == 1 and rest[0].type == "if_statement" and rest[0].child_by_field_name("alternative") is None:
            guard = rest[0]
            cons = guard.child_by_field_name("consequence")
            if cons is None or cons.type != "compound_statement":
                return Refused("the guarded sum is not a block")
            work = statements(cons)
        for s in [*decls, *exits] + ([guard.child_by_field_name("condition")] if guard is not None else []):
            if s is None or s is cols[0]:
                continue
            if re.search(word(col), src(source, s)):
                return Refused(f"the column `{col}` is read before the sum (in `{src(source, s)[:40]}`)")
        # the sum: declarations that read no column, `s = init;`, the loop `s += ...`, the store `OUT[i] = s;`
        if len(work) < 3:
            return Refused("the work is not `s = init; for (...) s += ...; OUT[i] = s;`")
        pre, acc_decl, loop, store = work[:-3], work[-3], work[-2], work[-1]
        for s in pre:
            if s.type != "declaration" or re.search(word(col), src(source, s)) or re.search(word(t), src(source, s)):
                return Refused("a statement before the sum that is not a declaration free of the column")
        acc = declares(source, acc_decl) if acc_decl.type == "declaration" else ""
        acc_init = acc_decl.named_children[-1].child_by_field_name("value") if acc else None
        if not acc or acc_init is None or re.search(word(col), src(source, acc_init)):
            return Refused("the accumulator is not declared with an initial value free of the column right before the loop")
        acc_type = src(source, acc_decl)[: acc_decl.named_children[-1].start_byte - acc_decl.start_byte].strip()
        lbody = loop.child_by_field_name("body") if loop.type == "for_statement" else None
        if lbody is not None and lbody.type == "compound_statement":
            inner_stmts = statements(lbody)
            lbody = inner_stmts[0] if len(inner_stmts) == 1 else None
        sm = _SUM.match(src(source, lbody)) if lbody is not None and lbody.type == "expression_statement" else None
        if lbody is None or sm is None or sm.group(1) != acc or re.search(word(acc), sm.group(2)):
            return Refused(f"the loop is not one `{acc} += EXPR;` that does not read `{acc}`")
        loop_body = loop.child_by_field_name("body")
        hm = re.fullmatch(r"for\s*\((.*)\)\s*", source[loop.start_byte:loop_body.start_byte].decode(), re.S) if loop_body else None
        if hm is None:
            return Refused("the loop's header does not read as `for (...)`")
        st = _STORE.match(src(source, store)) if store.type == "expression_statement" else None
        if st is None or st.group(3) != acc:
            return Refused(f"the sum is not stored as `OUT[index] = {acc};` right after the loop")
        head_text = hm.group(1)
        expr, out, out_index = sm.group(2), st.group(1), st.group(2)
        if assigned(col, expr) or any(assigned(n, expr) for n in (t, acc)):
            return Refused("the summed expression assigns")

        def sub_t(code: str) -> str:
            """`t / E` -> `row / (E / D)`; a bare `t` -> `(row * D + c)`."""
            def div(mm: re.Match[str]) -> str:
                e = constant(mm.group(1), macros)
                if e is None or e % row_len:
                    raise ValueError(mm.group(1))
                return f"{row} / {e // row_len}" if e != row_len else row
            code = re.sub(rf"(?<![\w.>]){t}\s*/\s*(\w+|\([^()]*\))", div, code)
            return re.sub(word(t), f"({row} * {row_len} + {col})", code)
        try:
            new_decls = [sub_t(src(source, s)) for s in [*decls, *exits] if s is not cols[0]]
            guard_cond = sub_t(text(source, guard.child_by_field_name("condition"))) if guard is not None else ""
            expr_t, out_index_t = sub_t(expr), sub_t(out_index)
        except ValueError as e:
            return Refused(f"`{t}` is divided by `{e}`, not a compile-time multiple of the row length {row_len}")
        if any(re.search(word(t), s) for s in new_decls) or re.search(word(t), guard_cond):
            return Refused(f"`{t}` is read other than as `{t} / E` before the sum")
        ind = indent_of(source, head.start_byte)
        lines = [f"int {row} = {src(source, value)};", *new_decls]
        work_lines = [src(source, s) for s in pre]
        work_lines += [f"{acc_type} {acc}[{row_len}];", "#pragma unroll",
                       f"for (int {col} = 0; {col} < {row_len}; ++{col}) {acc}[{col}] = {src(source, acc_init)};"]
        scalar = [f"for ({head_text}) {{", "    #pragma unroll", f"    for (int {col} = 0; {col} < {row_len}; ++{col})",
                  f"        {acc}[{col}] += {expr_t};", "}", "#pragma unroll",
                  f"for (int {col} = 0; {col} < {row_len}; ++{col})", f"    {out}[{out_index_t}] = {acc}[{col}];"]
        vector = vector_lines(source, facts, expr_t, out, out_index_t, col, acc, acc_type, row_len, head_text, macros,
                              self.kvec) if self.vec == 4 else None
        if isinstance(vector, Refused):
            return vector
        if vector is None:
            work_lines += scalar
        else:
            check, vlines = vector
            work_lines += [f"if ({check}) {{", *("    " + x for x in vlines), "} else {", *("    " + x for x in scalar), "}"]
        new = "\n".join(ind + x for x in lines) + (f"\n{ind}if {guard_cond} {{" if guard is not None else "")
        new += "\n" + "\n".join(ind + "    " * (guard is not None) + x for x in work_lines) + (f"\n{ind}}}" if guard is not None else "")
        edit = Edit(head.start_byte - len(ind), stmts[-1].end_byte, new)
        return Rewrite((edit,), LaunchChange(None, "coarsen-x", per_item=row_len),
                       f"a thread per row of {row_len} outputs" + (" (float4 words where aligned)" if vector else ""))
