"""vector-loads: a dot-product loop over unit-stride data reads its arrays in vector words.

The shape is one innermost loop `for (int k = A; k < B; ++k) ACC += P[e1] * Q[e2];` (or `ACC += P[e1];`) where ACC
is a private scalar and e1, e2 step by exactly one element with k. The stride is checked numerically: both index
expressions (macros expanded) are evaluated at k and k + 1 for several random values of every other name.

OpenCL: on CPU devices (PoCL) a work-item that walks a row element by element leaves the SIMD units idle; `vloadN`
gives each work-item contiguous vector loads. The sum is regrouped, so results match within the MEP's tolerance.

CUDA/HIP (width 4): a thread walking a row issues one 4-byte load per element and array (a warp's 32 rows each cost a
sector per load: batched_gemv16, gemv_rows); float4 words cut the loads and L1 wavefronts by four. The words are used
only where every array's first address is 16-byte aligned (checked at run time, else the original loop runs), and
their products are added one at a time in the original order, so the result is bit for bit the original's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.textsplit import split_top_level

from ._unit_stride import FUNC_MACRO, TERM, expand_macros, unit_stride

EXAMPLE_DIALECT = "opencl"
EXAMPLE_BEFORE = """\
#define IDX(i, j, n) ((i) * (n) + (j))
__kernel void mv(__global const float* A, __global const float* x, __global float* y, const int n)
{
    int i = get_global_id(0);
    if (i >= n) return;
    float sum = 0;
    for (int k = 0; k < n; ++k) {
        sum += A[IDX(i, k, n)] * x[k];
    }
    y[i] = sum;
}
"""
EXAMPLE_AFTER = """\
#define IDX(i, j, n) ((i) * (n) + (j))
__kernel void mv(__global const float* A, __global const float* x, __global float* y, const int n)
{
    int i = get_global_id(0);
    if (i >= n) return;
    float sum = 0;
    {  /* s2s: vector-loads width 4 */
        int k = 0;
        float4 s2s_acc = (float4)(0);
        for (; k + 4 <= n; k += 4)
            s2s_acc += vload4(0, &A[IDX(i, k, n)]) * vload4(0, &x[k]);
        sum += (s2s_acc.s0 + s2s_acc.s1) + (s2s_acc.s2 + s2s_acc.s3);
        for (; k < n; ++k) {
            sum += A[IDX(i, k, n)] * x[k];
        }
    }
    y[i] = sum;
}
"""

_LOOP = re.compile(r"for\s*\(\s*int\s+(\w+)\s*=\s*([^;]+);\s*\1\s*<\s*([^;]+);\s*(?:\+\+\1|\1\+\+|\1\s*\+=\s*1)\s*\)\s*"
                   r"(\{\s*)?(\w+)\s*\+=\s*(.+?);\s*(\})?\s*$", re.S)
_OBJ_MACRO = re.compile(r"^\s*#\s*define\s+(\w+)\s+(\w+)\s*$", re.M)


@dataclass(frozen=True)
class VectorLoads:
    name: ClassVar[str] = "vector-loads"
    WHY_IT_EXISTS: ClassVar[str] = "dot-product loops over unit-stride data in vector words (the zoo's gemv_rows)"
    priority: ClassVar[int] = 40  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("vector-loads{width=4}", "vector-loads{width=8}")
    width: int = 4

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.dialect != "opencl" and self.width != 4:
            return "CUDA/HIP: width 4 (float4) only"
        if self.width not in {2, 4, 8, 16}:
            return "width must be 2, 4, 8 or 16"
        if not any(lp.innermost and lp.kind == "for_statement" for lp in facts.loops):
            return "no innermost for loop"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        text = source.decode("utf-8", "replace")
        macros = {m.group(1): ([p.strip() for p in m.group(2).split(",")], m.group(3)) for m in FUNC_MACRO.finditer(text)}
        types = {m.group(1): m.group(2) for m in _OBJ_MACRO.finditer(text)}
        for loop in facts.loops:
            if not (loop.innermost and loop.kind == "for_statement"):
                continue
            body = text[loop.start:loop.end]
            m = _LOOP.match(body)
            if not m:
                continue
            var, init, bound, _open, acc, rhs = m.group(1), m.group(2).strip(), m.group(3).strip(), m.group(4), m.group(5), m.group(6)
            if acc not in facts.locals:
                return Refused(f"the accumulator '{acc}' is not a private local")
            factors = split_top_level(rhs, "*")
            terms = [TERM.match(f) for f in factors]
            if not all(terms):
                return Refused("the loop body is not a sum of products of array elements")
            elems = set()
            for t in terms:
                assert t is not None
                p = facts.param(t.group(1))
                if p is None or not p.pointer or p.written:
                    return Refused(f"'{t.group(1)}' is not a read-only pointer parameter")
                elems.add(types.get(p.base_type, p.base_type))
                if not unit_stride(expand_macros(t.group(2), macros), var):
                    return Refused(f"'{t.group(0).strip()}' does not step by one element with {var}")
            if elems - {"float", "double"} or len(elems) != 1:
                return Refused(f"element type {', '.join(sorted(elems))} has no vector type here")
            ind = text[text.rfind("\n", 0, loop.start) + 1:loop.start]
            tail = re.sub(r"for\s*\(\s*int\s+" + var + r"\s*=\s*[^;]+;", "for (;", body, count=1)
            if facts.dialect != "opencl":
                if elems != {"float"}:
                    return Refused("CUDA/HIP: float elements only (float4 words)")
                arrays = [t.group(0).strip() for t in terms if t is not None]
                return Rewrite((Edit(loop.start, loop.end, _cuda(arrays, var, init, bound, acc, tail, ind)),), None,
                               f"float4 loads in the loop over {var}, aligned at run time, the same order of additions")
            vec = f"{elems.pop()}{self.width}"
            loads = " * ".join(f"vload{self.width}(0, &{t.group(0).strip()})" for t in terms if t is not None)
            lanes = [f"s2s_acc.s{i:x}" for i in range(self.width)]
            while len(lanes) > 1:
                lanes = [f"({lanes[i]} + {lanes[i + 1]})" for i in range(0, len(lanes), 2)]
            reduce_expr = lanes[0][1:-1] if lanes[0].startswith("(") else lanes[0]
            new = (f"{{  /* s2s: vector-loads width {self.width} */\n"
                   f"{ind}    int {var} = {init};\n"
                   f"{ind}    {vec} s2s_acc = ({vec})(0);\n"
                   f"{ind}    for (; {var} + {self.width} <= {bound}; {var} += {self.width})\n"
                   f"{ind}        s2s_acc += {loads};\n"
                   f"{ind}    {acc} += {reduce_expr};\n"
                   f"{ind}    " + tail.replace("\n", "\n    ") + f"\n{ind}}}")
            return Rewrite((Edit(loop.start, loop.end, new),), None, f"{vec} loads in the loop over {var}")
        return Refused("no innermost loop of the form `for (int k = a; k < b; ++k) acc += P[..] * Q[..];`")


def _cuda(arrays: list[str], var: str, init: str, bound: str, acc: str, tail: str, ind: str) -> str:
    """The loop in float4 words where every array's first address is 16-byte aligned (checked at run time; else the
    original loop does it all). Each word's products are added one by one in the original order: bit for bit equal."""
    aligned = " | ".join(f"reinterpret_cast<unsigned long long>(&{a})" for a in arrays)
    words = [f"const float4 s2s_w{n} = *reinterpret_cast<const float4*>(&{a});" for n, a in enumerate(arrays)]
    adds = [f"{acc} += {' * '.join(f's2s_w{n}.{lane}' for n in range(len(arrays)))};" for lane in "xyzw"]
    lines = [f"int {var} = {init};", f"if ((({aligned}) & 15) == 0) {{", f"    for (; {var} + 4 <= {bound}; {var} += 4) {{",
             *(f"        {w}" for w in words + adds), "    }", "}", tail.replace("\n", "\n    ")]
    return "{  /* s2s: vector-loads, float4 words */" + "".join(f"\n{ind}    {ln}" for ln in lines) + f"\n{ind}}}"
