"""grid-stride-fill: a kernel with per-block work around one element per thread loops over its elements instead, on a
grid that just fills the device, so the per-block work runs once per resident block rather than once per 256 elements.

The shape: block-level statements (clearing a shared histogram, a barrier), then `int i = GID; if (i < n) S`, then more
block-level statements (a barrier, flushing the block's bins with global atomics). histo_shared launches 262144 blocks of
256 threads, each clearing and flushing 64 bins: 16.8M global atomics onto 64 addresses for 64 MiB of input, and the
H200 measured it at 1.3% of the copy bandwidth, latency-limited. Here `if (i < n) S` becomes
`for (i = GID; i < n; i += STRIDE) S` and the grid holds 132 x 2048 threads (any grid covers the range).

Refused unless the block-level code is the same in every block (no blockIdx, gridDim, get_group_id, get_global_id
outside the index), S has no barrier, return or jump, S changes no variable declared outside it (elements stay
independent), and the index is not used after the guard. What S adds up (atomics) is then added in another grouping.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import Device

from ._common import body_node, statements, text
from ._elementwise import _GID, _bound, _declared, _flat

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void histo(const unsigned char* data, int* bins, int n)
{
    __shared__ int local[64];
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&local[data[i] % 64], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        atomicAdd(&bins[b], local[b]);
}
"""
EXAMPLE_AFTER = """\
__global__ void histo(const unsigned char* data, int* bins, int n)
{
    __shared__ int local[64];
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i] % 64], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        atomicAdd(&bins[b], local[b]);
}
"""
_BLOCK_DEPENDENT = re.compile(r"\bblockIdx\b|\bgridDim\b|\bget_group_id\b|\bget_num_groups\b|\bget_global_id\b|\bget_global_size\b")
_JUMPS = re.compile(r"__syncthreads|\bbarrier\s*\(|__syncwarp|\breturn\b|\bbreak\b|\bcontinue\b|\bgoto\b")
_ASSIGNED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*(\[[^;]*?\])?\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?:\+\+|--)\s*([A-Za-z_]\w*)|"
                       r"([A-Za-z_]\w*)\s*(?:\+\+|--)")


@dataclass(frozen=True)
class GridStrideFill:
    name: ClassVar[str] = "grid-stride-fill"
    priority: ClassVar[int] = 55  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("grid-stride-fill",)

    def applies(self, facts: KernelFacts) -> bool | str:
        if not facts.shared and not facts.atomics:
            return "no shared memory or atomics: no per-block work to amortize (vector-elementwise takes plain streams)"
        if facts.dims != 1 or not facts.var_for("x"):
            return "needs a 1-D thread mapping along x"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        cl = facts.dialect == "opencl"
        stmts = statements(body_node(source, facts))
        k = next((j for j, s in enumerate(stmts[:-1]) if s.type == "declaration" and (d := _declared(source, s)) is not None
                  and d[2] is not None and _GID["opencl" if cl else "cuda"].match(_flat(text(source, d[2])))), None)
        if k is None:
            return Refused("no `int i = GLOBAL_INDEX;` among the body's statements")
        d = _declared(source, stmts[k])
        assert d is not None and d[2] is not None
        var, guard = d[1], stmts[k + 1]
        cond = guard.child_by_field_name("condition") if guard.type == "if_statement" else None
        then = guard.child_by_field_name("consequence") if cond is not None else None
        bound = _bound(source, cond, var)
        if then is None or bound is None or guard.child_by_field_name("alternative") is not None:
            return Refused(f"`{var}` is not followed by its guard `if ({var} < BOUND) ...`")
        if re.search(r"[\[=]|\+\+|--|\w\s*\(", bound) or re.search(rf"\b{var}\b", bound):
            return Refused(f"the bound `{bound}` is not a plain expression of the parameters")
        element = text(source, then)
        rest = text(source, body_node(source, facts)).replace(text(source, stmts[k]), " ").replace(text(source, guard), " ")
        if _BLOCK_DEPENDENT.search(rest):
            return Refused("the block-level code depends on which block runs it or on how many there are")
        if re.search(rf"\b{var}\b", rest):
            return Refused(f"`{var}` is used outside its guard")
        if _JUMPS.search(element) or _BLOCK_DEPENDENT.search(element):
            return Refused("a barrier, return or jump (or a block index) in the element's code")
        declared = set(re.findall(r"\b(?:int|float|double|unsigned|long|char|bool|auto)\s+([A-Za-z_]\w*)", element))
        for m in _ASSIGNED.finditer(element):
            name, index = m.group(1) or m.group(3) or m.group(4), m.group(2) or ""
            p = facts.param(name)
            if name in declared and not index or (p is not None and p.pointer and re.search(rf"\b{var}\b", index)):
                continue  # a local of the element, or the element's own place in a global array
            return Refused(f"`{name}{index}` is written in the element's code and outlives it (the one element per "
                           "thread that the block-level code reads would become the thread's last; atomics are fine)")
        stride = "get_global_size(0)" if cl else "blockDim.x * gridDim.x"
        new = f"for ({d[0]} {var} = {text(source, d[2])}; {var} < ({bound.strip()}); {var} += {stride})"
        ind = source[source.rfind(b"\n", 0, guard.start_byte) + 1:guard.start_byte].decode()
        new += f" {element}" if then.type == "compound_statement" else f"\n{ind}    {element}"
        dev = Device()
        return Rewrite((Edit(stmts[k].start_byte, guard.end_byte, new),),
                       LaunchChange(None, f"extent:{dev.sms * dev.threads_per_sm}"),
                       "a grid-stride loop over the elements on a grid that fills the device")
