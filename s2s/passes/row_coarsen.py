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

import random
import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang import index_split as ix
from s2s.lang.cexpr import EvalError, evaluate
from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.parsing import parse, src

from ._common import body_node, fresh, indent_of, statements, text, walk
from .thread_coarsen import _BARRIERS, _assigned, _declares, _global_index, _returns_only

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


def _word(name: str) -> str:
    return rf"(?<![\w.>]){re.escape(name)}\b"


def _steps(expr: str, var: str, macros: dict[str, int], by: int = 4) -> int | None:
    """expr(var + 1) - expr(var) when it is the same for random values of every other name (macros at their values);
    None when it is not, or when the expression cannot be evaluated. With `by`, also None unless expr(var = 0) is a
    multiple of `by` at every sample."""
    rng = random.Random(11)
    step: int | None = None
    for _ in range(5):
        env: dict[str, int] = {}

        def at(v: int, env: dict[str, int] = env) -> float | int:
            return evaluate(expr, lambda n: v if n == var else macros[n] if n in macros else env.setdefault(n, rng.randint(3, 997)))
        try:
            base, d = at(0), at(1) - at(0)
        except (EvalError, ZeroDivisionError, KeyError):
            return None
        if not isinstance(d, int) or (step is not None and d != step) or (by and base % by):
            return None
        step = d
    return step


@dataclass(frozen=True)
class RowCoarsen:
    name: ClassVar[str] = "row-coarsen"
    priority: ClassVar[int] = 10  # a batched small product's first step: no other pass reaches its loads
    space: ClassVar[tuple[str, ...]] = ("row-coarsen", "row-coarsen{vec=1}", "row-coarsen,launch-config{block=128}")
    vec: int = 4  # 4: float4 words where proven; 1: scalar

    def applies(self, facts: KernelFacts) -> bool | str:
        if self.vec not in {1, 4}:
            return "vec must be 1 or 4"
        if facts.dialect == "opencl":
            return "CUDA/HIP only (the global size would have to shrink by the row)"
        return True if facts.var_for("x") else "no global index along x"

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        body = body_node(source, facts)
        if _BARRIERS.search(src(source, body)) or facts.atomics:
            return Refused("barriers, shared memory, warp collectives or atomics: threads of a block must stay in step")
        stmts = statements(body)
        head = stmts[0] if stmts else None
        t = _declares(source, head) if head is not None and head.type == "declaration" else ""
        init = head.named_children[-1] if head is not None and t else None
        value = init.child_by_field_name("value") if init is not None else None
        if head is None or not t or value is None or not _global_index(src(source, value), "x"):
            return Refused("the body does not start with `int t = blockIdx.x * blockDim.x + threadIdx.x;`")
        macros = ix.int_macros(source)
        decls, i = [], 1
        while i < len(stmts) and stmts[i].type == "declaration":
            decls.append(stmts[i])
            i += 1
        cols = [d for d in decls if re.fullmatch(rf"\w+\s+\w+\s*=\s*\(?\s*{t}\s*\)?\s*%\s*(.+?)\s*;", src(source, d), re.S)]
        if len(cols) != 1:
            return Refused(f"no single column `c = {t} % D` among the declarations after the index")
        col = _declares(source, cols[0])
        dtext = re.fullmatch(rf"\w+\s+\w+\s*=\s*\(?\s*{t}\s*\)?\s*%\s*(.+?)\s*;", src(source, cols[0]), re.S)
        row_len = _constant(dtext.group(1) if dtext else "", macros)
        if row_len is None or not 2 <= row_len <= MAX_ROW or row_len % self.vec:
            return Refused(f"the row length of `{col}` is not a compile-time constant 2-{MAX_ROW} (a multiple of {self.vec})")
        row = fresh(facts, source, "row")
        rest = stmts[i:]
        # the guard: `if (...) return;` exits, then the sum; or one `if (...) { sum }` without else
        exits = []
        while rest and rest[0].type == "if_statement" and _returns_only(source, rest[0]):
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
            if re.search(_word(col), src(source, s)):
                return Refused(f"the column `{col}` is read before the sum (in `{src(source, s)[:40]}`)")
        # the sum: declarations that read no column, `s = init;`, the loop `s += ...`, the store `OUT[i] = s;`
        if len(work) < 3:
            return Refused("the work is not `s = init; for (...) s += ...; OUT[i] = s;`")
        pre, acc_decl, loop, store = work[:-3], work[-3], work[-2], work[-1]
        for s in pre:
            if s.type != "declaration" or re.search(_word(col), src(source, s)) or re.search(_word(t), src(source, s)):
                return Refused("a statement before the sum that is not a declaration free of the column")
        acc = _declares(source, acc_decl) if acc_decl.type == "declaration" else ""
        acc_init = acc_decl.named_children[-1].child_by_field_name("value") if acc else None
        if not acc or acc_init is None or re.search(_word(col), src(source, acc_init)):
            return Refused("the accumulator is not declared with an initial value free of the column right before the loop")
        acc_type = src(source, acc_decl)[: acc_decl.named_children[-1].start_byte - acc_decl.start_byte].strip()
        lbody = loop.child_by_field_name("body") if loop.type == "for_statement" else None
        if lbody is not None and lbody.type == "compound_statement":
            inner_stmts = statements(lbody)
            lbody = inner_stmts[0] if len(inner_stmts) == 1 else None
        sm = _SUM.match(src(source, lbody)) if lbody is not None and lbody.type == "expression_statement" else None
        if lbody is None or sm is None or sm.group(1) != acc or re.search(_word(acc), sm.group(2)):
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
        if _assigned(col, expr) or any(_assigned(n, expr) for n in (t, acc)):
            return Refused("the summed expression assigns")

        def sub_t(code: str) -> str:
            """`t / E` -> `row / (E / D)`; a bare `t` -> `(row * D + c)`."""
            def div(mm: re.Match[str]) -> str:
                e = _constant(mm.group(1), macros)
                if e is None or e % row_len:
                    raise ValueError(mm.group(1))
                return f"{row} / {e // row_len}" if e != row_len else row
            code = re.sub(rf"(?<![\w.>]){t}\s*/\s*(\w+|\([^()]*\))", div, code)
            return re.sub(_word(t), f"({row} * {row_len} + {col})", code)
        try:
            new_decls = [sub_t(src(source, s)) for s in [*decls, *exits] if s is not cols[0]]
            guard_cond = sub_t(text(source, guard.child_by_field_name("condition"))) if guard is not None else ""
            expr_t, out_index_t = sub_t(expr), sub_t(out_index)
        except ValueError as e:
            return Refused(f"`{t}` is divided by `{e}`, not a compile-time multiple of the row length {row_len}")
        if any(re.search(_word(t), s) for s in new_decls) or re.search(_word(t), guard_cond):
            return Refused(f"`{t}` is read other than as `{t} / E` before the sum")
        ind = indent_of(source, head.start_byte)
        inner = ind + ("    " if guard is not None else "")
        lines = [f"int {row} = {src(source, value)};", *new_decls]
        work_lines = [src(source, s) for s in pre]
        work_lines += [f"{acc_type} {acc}[{row_len}];", "#pragma unroll",
                       f"for (int {col} = 0; {col} < {row_len}; ++{col}) {acc}[{col}] = {src(source, acc_init)};"]
        scalar = [f"for ({head_text}) {{", "    #pragma unroll", f"    for (int {col} = 0; {col} < {row_len}; ++{col})",
                  f"        {acc}[{col}] += {expr_t};", "}", "#pragma unroll",
                  f"for (int {col} = 0; {col} < {row_len}; ++{col})", f"    {out}[{out_index_t}] = {acc}[{col}];"]
        vector = self._vector(source, facts, expr_t, out, out_index_t, col, acc, acc_type, row_len, head_text, macros) if self.vec == 4 else None
        if isinstance(vector, Refused):
            return vector
        if vector is None:
            work_lines += scalar
        else:
            check, vlines = vector
            work_lines += [f"if ({check}) {{", *("    " + x for x in vlines), "} else {", *("    " + x for x in scalar), "}"]
        new = "\n".join(ind + x for x in lines)
        if guard is not None:
            new += f"\n{ind}if {guard_cond} {{\n" + "\n".join(inner + x for x in work_lines) + f"\n{ind}}}"
        else:
            new += "\n" + "\n".join(ind + x for x in work_lines)
        edit = Edit(head.start_byte - len(ind), stmts[-1].end_byte, new)
        return Rewrite((edit,), LaunchChange(None, "coarsen-x", per_item=row_len),
                       f"a thread per row of {row_len} outputs" + (" (float4 words where aligned)" if vector else ""))

    def _vector(self, source: bytes, facts: KernelFacts, expr: str, out: str, out_index: str, col: str, acc: str,
                acc_type: str, row_len: int, head_text: str, macros: dict[str, int]
                ) -> tuple[str, list[str]] | Refused | None:
        if acc_type.replace("const", "").strip() != "float":
            return Refused("float4 words need a float sum (vec=1 keeps scalars)")
        wrapped = ("int __s2s = " + expr + ";").encode()
        root = parse(wrapped, facts.dialect).root_node
        subs = [n for n in walk(root, descend=lambda n: n.type != "subscript_expression") if n.type == "subscript_expression"]
        lanes = ("x", "y", "z", "w")
        words: list[str] = []
        checked: list[str] = []
        pieces: list[tuple[int, int, str]] = []
        for n in subs:
            arr, idx = n.child_by_field_name("argument"), n.child_by_field_name("indices") or n.child_by_field_name("index")
            if arr is None or idx is None or arr.type != "identifier":
                continue
            itext = src(wrapped, idx).strip()[1:-1].strip() if idx.type == "subscript_argument_list" else src(wrapped, idx)
            if _steps(itext, col, macros) == 1 and _elem(source, facts, src(wrapped, arr)) == "float":
                name = f"v{len(words)}"
                words.append(f"float4 {name} = *(const float4*)&{src(wrapped, arr)}[{itext}];")
                pieces.append((n.start_byte - 12, n.end_byte - 12, name))
                checked.append(src(wrapped, arr))
        store_ok = _steps(out_index, col, macros) == 1 and _elem(source, facts, out) == "float"
        if not words and not store_ok:
            return None
        body = []
        for lane in range(4):
            e = expr
            for start, end, name in sorted(pieces, reverse=True):
                e = e[:start] + f"{name}.{lanes[lane]}" + e[end:]
            e = re.sub(_word(col), f"({col} + {lane})", e)
            body.append(f"        {acc}[{col} + {lane}] += {e};")
        vlines = [f"for ({head_text}) {{", "    #pragma unroll", f"    for (int {col} = 0; {col} < {row_len}; {col} += 4) {{",
                  *("        " + w for w in words), *body, "    }", "}", "#pragma unroll"]
        if store_ok:
            vals = ", ".join(f"{acc}[{col} + {lane}]" for lane in range(4))
            vlines += [f"for (int {col} = 0; {col} < {row_len}; {col} += 4)",
                       f"    *(float4*)&{out}[{out_index}] = make_float4({vals});"]
            checked.append(out)
        else:
            vlines += [f"for (int {col} = 0; {col} < {row_len}; ++{col})", f"    {out}[{out_index}] = {acc}[{col}];"]
        check = " && ".join(f"((unsigned long long){a} & 15) == 0" for a in dict.fromkeys(checked))
        return check, vlines


def _constant(text: str, macros: dict[str, int]) -> int | None:
    try:
        v = evaluate(text, lambda n: macros.get(n))
    except (EvalError, ZeroDivisionError):
        return None
    return v if isinstance(v, int) else None


def _elem(source: bytes, facts: KernelFacts, name: str) -> str:
    """The element type of a pointer parameter or a pointer declared in the body (`const float* a = ...`)."""
    p = facts.param(name)
    if p is not None:
        return p.base_type.replace("const", "").strip() if p.pointer else ""
    body = source[facts.body_start:facts.body_end].decode("utf-8", "replace")
    m = re.search(rf"(?:const\s+)?(\w+)\s*(?:const\s+)?\*\s*(?:const\s+|__restrict__\s+)*{re.escape(name)}\s*=", body)
    return m.group(1) if m else ""
