"""vector-elementwise-2d: a 2-D elementwise kernel moves its rows in 16-byte words, four consecutive columns per thread.

A rank-1 update (`A[i * n + j] += alpha * x[i] * y[j]`, one thread per element on a 2-D grid) streams A like a copy,
but with one 4-byte load and store per thread the memory system holds too few bytes in flight (ger: 76% of the copy
floor on the H200, where axpy in float4 words reaches it). Here the thread of column quad q takes j = 4q .. 4q + 3:
every array indexed at `row + j` (`A[i * ld + j]`, `y[j]`) comes in as one float4 (int4, uint4) word, every array
indexed free of j (`x[i]`) is read once into a register, the element's code runs four times on registers and each
array it writes goes back as one word. The shape (passes/memory/_elementwise_2d.py) guarantees that each element computes
exactly what it did before. The grid's x shrinks by 4 (launch rule coarsen-x). A quad whose words are not 16-byte
aligned (checked at run time at the row: an `ld` that is not a multiple of 4, an offset base pointer) or that crosses
the guard's bound takes the original code for each of its four elements. OpenCL uses vload4/vstore4 (no alignment).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.thread_index import elem_type
from ..common.tree import fresh, indent_of
from ._elementwise import shape as shape_1d
from ._elementwise_2d import Shape, shape
from .vector_elementwise import VECTOR_TYPES, source_lines

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void ger(float* A, const float* x, const float* y, float alpha, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n)
        A[i * n + j] += alpha * x[i] * y[j];
}
"""
EXAMPLE_AFTER = """\
__global__ void ger(float* A, const float* x, const float* y, float alpha, int n)
{
    /* s2s: vector-elementwise-2d, 4 consecutive j per thread in 16-byte words */
    int s2s_q = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && s2s_q * 4 + 3 < (n) && ((reinterpret_cast<unsigned long long>(&A[i * n + (s2s_q * 4)]) | reinterpret_cast<unsigned long long>(&y[(s2s_q * 4)])) & 15) == 0) {
        const float4 s2s_A4 = *reinterpret_cast<const float4*>(&A[i * n + (s2s_q * 4)]);
        float s2s_A[4] = {s2s_A4.x, s2s_A4.y, s2s_A4.z, s2s_A4.w};
        const float s2s_x = x[i];
        const float4 s2s_y4 = *reinterpret_cast<const float4*>(&y[(s2s_q * 4)]);
        float s2s_y[4] = {s2s_y4.x, s2s_y4.y, s2s_y4.z, s2s_y4.w};
        #pragma unroll
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            s2s_A[s2s_c] += alpha * s2s_x * s2s_y[s2s_c];
        }
        *reinterpret_cast<float4*>(&A[i * n + (s2s_q * 4)]) = make_float4(s2s_A[0], s2s_A[1], s2s_A[2], s2s_A[3]);
    } else {
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            int j = s2s_q * 4 + s2s_c;
            if (i < n && j < n)
                A[i * n + j] += alpha * x[i] * y[j];
        }
    }
}
"""
_CUDA_LANES, _CL_LANES = ("x", "y", "z", "w"), ("s0", "s1", "s2", "s3")


@dataclass(frozen=True)
class VectorElementwise2d:
    name: ClassVar[str] = "vector-elementwise-2d"
    WHY_IT_EXISTS: ClassVar[str] = "2-D elementwise kernels such as a rank-1 update (the zoo's ger)"
    priority: ClassVar[int] = 36  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = (
        "vector-elementwise-2d",
        # ger's H200 winner before this pass (164.6 us, 76% of the copy floor) with float4 rows: one entry, so that
        # round 1 tries it instead of reaching it after two extensions
        "vector-elementwise-2d,thread-coarsen{axis=y factor=4},launch-config{block=128}",
    )

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.shared or facts.atomics:
            return "shared memory or atomics: not an elementwise kernel"
        if not any(p.pointer for p in facts.params):
            return "no pointer parameter"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        if not isinstance(shape_1d(source, facts), str):
            return Refused("a 1-D elementwise kernel: vector-elementwise's")
        sh = shape(source, facts)
        if isinstance(sh, str):
            return Refused(sh)
        types = {p.name: elem_type(p.type) for p in facts.params}
        bad = sorted({f"{g.array} ({types.get(g.array, '?')})" for g in sh.groups if g.row and types.get(g.array) not in VECTOR_TYPES})
        if bad:
            return Refused(f"no 4-wide vector type for {', '.join(bad)}")
        if not any(g.row for g in sh.groups):
            return Refused(f"no array is indexed by `{sh.var}`: nothing to move in words")
        if sh.var_type != "int" and facts.dialect == "opencl":
            return Refused(f"the index is a {sh.var_type}: kept to int in OpenCL")
        q, c = fresh(facts, source, "s2s_q"), fresh(facts, source, "s2s_c")
        names: list[str] = []
        for g in sh.groups:
            want = f"s2s_{g.array}" + ("" if not any(h.array == g.array for h in sh.groups[:len(names)]) else f"_{len(names)}")
            names.append(fresh(facts, source, want))
        head = (f"/* s2s: vector-elementwise-2d, 4 consecutive {sh.var} per thread in 16-byte words */\n"
                f"{indent_of(source, sh.decl[0])}{sh.var_type} {q} = {sh.gid};")
        body = _guarded(source, sh, types, names, q, c, indent_of(source, sh.guard[0]), facts.dialect == "opencl")
        words = ", ".join(sorted({VECTOR_TYPES[types[g.array]] for g in sh.groups if g.row}))
        return Rewrite((Edit(sh.decl[0], sh.decl[1], head), Edit(sh.guard[0], sh.guard[1], body)),
                       LaunchChange(None, "coarsen-x", 4), f"{words} words, 4 consecutive {sh.var} per thread")


def _guarded(source: bytes, sh: Shape, types: dict[str, str], names: list[str], q: str, c: str, ind: str, cl: bool) -> str:
    replaced, pos = b"", 0
    for a in sorted(sh.accesses, key=lambda a: a.start):
        name = names[a.group]
        replaced += source[pos:a.start] + (f"{name}[{c}]" if sh.groups[a.group].row else name).encode()
        pos = a.end
    replaced += source[pos:]
    shift = len(replaced) - len(source)
    lane = source_lines(replaced, sh.lane[0], sh.lane[1] + shift)
    base = f"({q} * 4)"
    loads, stores, addresses = [], [], []
    for g, la in zip(sh.groups, names):
        ty = types[g.array]
        if not g.row:
            loads.append(f"const {ty} {la} = {g.sample};")
            continue
        vt, at = VECTOR_TYPES[ty], "&" + re.sub(rf"\b{sh.var}\b", base, g.sample)
        addresses.append(f"reinterpret_cast<unsigned long long>({at})")
        if g.load_needed:
            word = f"vload4(0, {at})" if cl else f"*reinterpret_cast<const {vt}*>({at})"
            comps = ", ".join(f"{la}4.{k}" for k in (_CL_LANES if cl else _CUDA_LANES))
            loads += [f"const {vt} {la}4 = {word};", f"{ty} {la}[4] = {{{comps}}};"]
        else:
            loads.append(f"{ty} {la}[4];")
        if g.written:
            parts = ", ".join(f"{la}[{k}]" for k in range(4))
            stores.append(f"vstore4(({vt})({parts}), 0, {at});" if cl else f"*reinterpret_cast<{vt}*>({at}) = make_{vt}({parts});")
    index = [f"    {sh.var_type} {sh.var} = {q} * 4 + {c};"] if re.search(rf"\b{sh.var}\b", "\n".join(lane)) else []
    vector = [*loads, "#pragma unroll", f"for (int {c} = 0; {c} < 4; ++{c}) {{", *index, *(f"    {ln}" for ln in lane), "}",
              *stores]
    others = " && ".join(t if re.fullmatch(r"[\w\s.<>=!+\-*/%()\[\]]*", t) else f"({t})" for t in sh.others)
    aligned = "" if cl else f"(({' | '.join(addresses)}) & 15) == 0"
    cond = " && ".join(x for x in (others, f"{q} * 4 + 3 < ({sh.bound})", aligned) if x)
    original = source_lines(source, sh.guard[0], sh.guard[1])
    lines = [f"if ({cond}) {{", *(f"    {ln}" for ln in vector), "} else {", f"    for (int {c} = 0; {c} < 4; ++{c}) {{",
             f"        {sh.var_type} {sh.var} = {q} * 4 + {c};", *(f"        {ln}" for ln in original), "    }", "}"]
    return lines[0] + "".join(f"\n{ind}{ln}" if ln else "\n" for ln in lines[1:])

