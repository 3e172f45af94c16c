"""vector-elementwise: an elementwise kernel moves its arrays in 16-byte words, four elements per thread and access.

A streaming kernel (axpy, a scale, a grid-stride `y[i] = a * x[i] + b * y[i]`) is limited by the bytes each thread has
in flight, not by arithmetic: a 4-byte load per array per thread leaves the memory system idle when the launch holds
few threads (a grid-stride loop over a fixed grid). Here each thread loads every array it reads as one float4 (int4,
uint4) for four consecutive elements, runs the element's code four times on registers, and stores each array it writes
as one word. The shape (passes/memory/_elementwise.py) guarantees that elements are independent and every pointer is touched
only at `P[i]`, so each element computes exactly what it did before, bit for bit.

One thread per element (`if (i < n) ...`): the grid shrinks by 4 (launch rule coarsen-x); the last, partial quad and
any pointer not 16-byte aligned (checked at run time, CUDA/HIP) take the original code for each of the four elements.
A grid-stride loop keeps its launch (or, with `fill=1`, is given enough threads to fill an H200: the loop covers any
grid); the elements past the last whole quad follow in a scalar loop. OpenCL uses vload4/vstore4 (no alignment needed).
Elements of any other type (a template's `T`, `__half`, `double`, `int64_t`, a struct) move in CUDA/HIP as one
`s2s_quad<T>`, four elements in a struct aligned to their size where that is a power of two up to 32 bytes (one or two
wide loads), and the pointer is checked against that alignment at run time; a type whose four elements make no such
word (float3) or are wide already (float4) is refused. Arrays the code only reads at another index (a gather) are read
as before, in each element's code.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import fresh, indent_of, insert_before_kernel
from ._elementwise import Shape, shape

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void axpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
"""
EXAMPLE_AFTER = """\
__global__ void axpy(int n, float a, const float* x, float* y)
{
    /* s2s: vector-elementwise, 4 elements per thread in 16-byte words */
    int s2s_q = blockIdx.x * blockDim.x + threadIdx.x;
    if (s2s_q * 4 + 3 < (n) && ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15) == 0) {
        const float4 s2s_x4 = reinterpret_cast<const float4*>(x)[s2s_q];
        float s2s_x[4] = {s2s_x4.x, s2s_x4.y, s2s_x4.z, s2s_x4.w};
        const float4 s2s_y4 = reinterpret_cast<const float4*>(y)[s2s_q];
        float s2s_y[4] = {s2s_y4.x, s2s_y4.y, s2s_y4.z, s2s_y4.w};
        #pragma unroll
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            s2s_y[s2s_c] = a * s2s_x[s2s_c] + s2s_y[s2s_c];
        }
        reinterpret_cast<float4*>(y)[s2s_q] = make_float4(s2s_y[0], s2s_y[1], s2s_y[2], s2s_y[3]);
    } else {
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            int i = s2s_q * 4 + s2s_c;
            if (i < (n)) {
                y[i] = a * x[i] + y[i];
            }
        }
    }
}
"""
VECTOR_TYPES = {"float": "float4", "int": "int4", "unsigned": "uint4", "unsigned int": "uint4"}
QUAD = "s2s_quad"  # four elements of any type in one aligned word (QUAD_DEFINITION), where VECTOR_TYPES has no type
QUAD_DEFINITION = """\
#ifndef S2S_QUAD
#define S2S_QUAD
template <typename S2S_T, unsigned long long S2S_B = 4 * sizeof(S2S_T)>
struct alignas((S2S_B & (S2S_B - 1)) == 0 && S2S_B <= 32 ? S2S_B : alignof(S2S_T)) s2s_quad { S2S_T v[4]; };
#endif"""
_LANE_BYTES = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4, "long": 8, "ulong": 8, "longlong": 8,
               "ulonglong": 8, "float": 4, "double": 8, "half": 2}
_BUILTIN_VECTOR = re.compile(r"^(u?(?:char|short|int|long|longlong)|float|double|half)([1-4])$")


def _no_word(ty: str) -> bool:
    """Whether four elements of CUDA's vector type `ty` (float3, double2, uchar4) make no aligned word of 4-32 bytes."""
    m = _BUILTIN_VECTOR.match(ty)
    return m is not None and _LANE_BYTES[m.group(1)] * int(m.group(2)) not in {1, 2, 4, 8}


_CUDA_LANES, _CL_LANES = ("x", "y", "z", "w"), ("s0", "s1", "s2", "s3")


@dataclass(frozen=True)
class VectorElementwise:
    name: ClassVar[str] = "vector-elementwise"
    priority: ClassVar[int] = 35  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("vector-elementwise", "vector-elementwise{fill=1}")
    fill: bool = False  # a grid-stride loop only: launch enough threads to fill the device

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.shared or facts.atomics:
            return "shared memory or atomics: not an elementwise kernel"
        if not any(p.pointer for p in facts.params):
            return "no pointer parameter"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        sh = shape(source, facts)
        if isinstance(sh, str):
            return Refused(sh)
        bad = [f"{a} ({t})" for a, t in sh.types if t not in VECTOR_TYPES and (facts.dialect == "opencl" or _no_word(t))]
        if bad:
            return Refused(f"no 4-wide vector type for {', '.join(bad)}")
        if self.fill and sh.kind != "stride":
            return Refused("fill: only a grid-stride loop covers any grid")
        if sh.var_type != "int" and facts.dialect == "opencl":
            return Refused(f"the index is a {sh.var_type}: OpenCL's vloadn offset is a size_t of quads")
        cl = facts.dialect == "opencl"
        names = {w: fresh(facts, source, f"s2s_{w}") for w in ("q", "c")}
        lanes = {a: fresh(facts, source, f"s2s_{a}") for a, _ in sh.types}
        ind = indent_of(source, sh.start)
        new = _generate(source, facts, sh, names["q"], names["c"], lanes, ind, cl)
        launch = None
        if sh.kind == "guarded":
            launch = LaunchChange(None, "coarsen-x", 4)
        elif self.fill:
            launch = LaunchChange(None, f"extent:{facts.device.thread_slots}")
        note = f"{', '.join(_word(t) for _, t in sh.types)} words, 4 elements per thread" + (" (grid fills the device)" if self.fill else "")
        edits = [Edit(sh.start, sh.end, new)]
        if any(t not in VECTOR_TYPES for _, t in sh.types):
            edits.append(insert_before_kernel(source, facts, QUAD_DEFINITION))
        return Rewrite(tuple(edits), launch, note)


def _word(ty: str) -> str:
    """The type of one word of four `ty` elements."""
    return VECTOR_TYPES.get(ty, f"{QUAD}<{ty}>")


def _generate(source: bytes, facts: KernelFacts, sh: Shape, q: str, c: str, lanes: dict[str, str], ind: str, cl: bool) -> str:
    replaced, pos = b"", 0
    for a in sorted((a for a in sh.accesses if not a.gather), key=lambda a: a.start):
        replaced += source[pos:a.start] + f"{lanes[a.array]}[{c}]".encode()
        pos = a.end
    replaced += source[pos:]
    shift = len(replaced) - len(source)  # the lane's end moves by what the replacements added
    vector_lane = source_lines(replaced, sh.lane_start, sh.lane_end + shift)
    scalar_lane = source_lines(source, sh.lane_start, sh.lane_end)
    loads, stores = [], []
    needed = {a.array for a in sh.accesses if a.load_needed and not a.gather}
    written = {a.array for a in sh.accesses if a.written}
    at = {a.array: f"({a.array} + ({a.offset}))" if a.offset else a.array for a in sh.accesses if not a.gather}  # word 0
    for arr, ty in sh.types:
        vt, la, ptr = _word(ty), lanes[arr], at[arr]
        comps = _CL_LANES if cl else _CUDA_LANES if ty in VECTOR_TYPES else tuple(f"v[{k}]" for k in range(4))
        if arr in needed:
            word = f"vload4({q}, {ptr})" if cl else f"reinterpret_cast<const {vt}*>({ptr})[{q}]"
            loads += [f"const {vt} {la}4 = {word};", f"{ty} {la}[4] = {{{', '.join(f'{la}4.{k}' for k in comps)}}};"]
        else:
            loads.append(f"{ty} {la}[4];")
        if arr in written:
            parts = ", ".join(f"{la}[{k}]" for k in range(4))
            stores.append(f"vstore4(({vt})({parts}), {q}, {ptr});" if cl else
                          f"reinterpret_cast<{vt}*>({ptr})[{q}] = make_{vt}({parts});" if ty in VECTOR_TYPES else
                          f"reinterpret_cast<{vt}*>({ptr})[{q}] = {vt}{{{{{parts}}}}};")
    index = [f"    {sh.var_type} {sh.var} = {q} * 4 + {c};"] if re.search(rf"\b{sh.var}\b", "\n".join(vector_lane)) else []
    lanes_loop = ["#pragma unroll", f"for (int {c} = 0; {c} < 4; ++{c}) {{", *index, *(f"    {ln}" for ln in vector_lane), "}"]
    vector = [*loads, *lanes_loop, *stores]
    aligned = "" if cl else " && ".join(_aligned(sh.types, at))
    head = ["/* s2s: vector-elementwise, 4 elements per thread in 16-byte words */", f"{sh.var_type} {q} = {sh.gid};"]
    if sh.kind == "guarded":
        cond = f"{q} * 4 + 3 < ({sh.bound})" + (f" && {aligned}" if aligned else "")
        body = [f"if ({cond}) {{", *(f"    {ln}" for ln in vector), "} else {",
                f"    for (int {c} = 0; {c} < 4; ++{c}) {{", f"        {sh.var_type} {sh.var} = {q} * 4 + {c};",
                f"        if ({sh.var} < ({sh.bound})) {{", *(f"            {ln}" for ln in scalar_lane), "        }", "    }", "}"]
    else:
        quads = [f"for (; {q} < ({sh.bound}) / 4; {q} += {sh.stride}) {{", *(f"    {ln}" for ln in vector), "}",
                 f"for ({sh.var_type} {sh.var} = ({sh.bound}) / 4 * 4 + {sh.gid}; {sh.var} < ({sh.bound}); {sh.var} += {sh.stride}) {{",
                 *(f"    {ln}" for ln in scalar_lane), "}"]
        body = quads if cl else [f"if ({aligned}) {{", *(f"    {ln}" for ln in quads), "} else {",
                                 *(f"    {ln}" for ln in source_lines(source, sh.start, sh.end)), "}"]
    lines = head + body
    return lines[0] + "".join(f"\n{ind}{ln}" if ln else "\n" for ln in lines[1:])


def _aligned(types: tuple[tuple[str, str], ...], at: dict[str, str]) -> list[str]:
    """The run-time checks that every array's first word (`at`: the array, or the array plus a loop's offset) starts on
    its word's boundary: the float4/int4 arrays together (16 bytes), each other type on its quad's own alignment."""
    out = []
    fixed = [at[a] for a, t in types if t in VECTOR_TYPES]
    if fixed:
        out.append("((" + " | ".join(f"reinterpret_cast<unsigned long long>({a})" for a in fixed) + ") & 15) == 0")
    out += [f"(reinterpret_cast<unsigned long long>({at[a]}) & (alignof({_word(t)}) - 1)) == 0" for a, t in types if t not in VECTOR_TYPES]
    return out


def source_lines(data: bytes, start: int, end: int) -> list[str]:
    """The text between start and end as lines, edges stripped, later lines losing the first line's indentation."""
    while start < end and data[start:start + 1].isspace():
        start += 1
    col = start - (data.rfind(b"\n", 0, start) + 1)
    lines = data[start:end].decode("utf-8", "replace").rstrip().splitlines()
    return [lines[0], *(ln[min(col, len(ln) - len(ln.lstrip())):] for ln in lines[1:])] if lines else []
