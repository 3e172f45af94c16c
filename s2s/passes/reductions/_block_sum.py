"""Same-address sums (helpers of atomic-accumulate and warp-reduce-atomics): one atomic per block, and a grid-stride
sum through 16-byte loads.

One atomic per block: the block's threads add their values with warp shuffles and shared memory, thread 0 adds the
block's sum to the target.

Any block shape works: the flat thread index counts x fastest, the last warp of a block may be partial (its shuffle
mask names the lanes that exist and no lane adds a value from a lane that does not), and the first warp adds the
warps' sums the same way. Every thread of the block must reach the code: it holds a barrier.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from s2s.lang.kernel_facts import KernelFacts, idents

from ..common.thread_index import elem_type
from ..common.tree import fresh


def block_sum(facts: KernelFacts, source: bytes, value: str, ty: str, target: str) -> list[str]:
    """Lines of a `{ ... }` block that adds every thread's `value` (a local of type `ty`, overwritten) and has thread 0
    of the block `atomicAdd(target, sum)`."""
    tid, size, here, wmask, off, other, warps = (fresh(facts, source, w) for w in
                                                  ("tid", "size", "here", "wmask", "off", "other", "warps"))
    sums = fresh(facts, source, f"{value}_w")

    def shuffle(lane: str) -> list[str]:
        return [f"for (int {off} = 16; {off} > 0; {off} /= 2) {{",
                f"    {ty} {other} = __shfl_down_sync({wmask}, {value}, {off});",
                f"    if ({lane} + {off} < {here}) {value} += {other};",
                "}"]

    return ["{",
            f"    __shared__ {ty} {sums}[32];",
            f"    const int {tid} = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);",
            f"    const int {size} = blockDim.x * blockDim.y * blockDim.z;",
            f"    const int {here} = {size} - ({tid} & ~31);",
            f"    const unsigned {wmask} = {here} >= 32 ? 0xffffffffu : (1u << {here}) - 1u;",
            *(f"    {line}" for line in shuffle(f"({tid} & 31)")),
            f"    if (({tid} & 31) == 0) {sums}[{tid} / 32] = {value};",
            "    __syncthreads();",
            f"    if ({tid} < 32) {{",
            f"        const int {warps} = ({size} + 31) / 32;",
            f"        {value} = {tid} < {warps} ? {sums}[{tid}] : ({ty})0;",
            *(f"        {line}" for line in shuffle(tid)),
            f"        if ({tid} == 0) atomicAdd({target}, {value});",
            "    }",
            "}"]


def _lane(words: dict[str, str], c: str) -> Callable[[re.Match[str]], str]:
    return lambda m: f"{words[m.group(1)]}.{c}"


_VECTOR = {"float": "float4", "int": "int4", "unsigned": "uint4", "unsigned int": "uint4"}


def quad_sum(facts: KernelFacts, source: bytes, head: tuple[str, str, str, str], acc: str, value: str,
             unroll: int = 1) -> list[str] | None:
    """A grid-stride sum `for (TYPE i = GID; i < BOUND; i += STRIDE) acc += VALUE;` (head = TYPE, i, GID, BOUND) as
    16-byte loads: where VALUE reads every array only at `P[i]` (4-byte elements), each thread takes whole quads of
    elements through float4/int4/uint4 words, four times the bytes in flight of one 4-byte load per array; the
    elements past the last whole quad, or all of them when a pointer is not 16-byte aligned, follow in the scalar
    loop. None where VALUE does not qualify (another use of i, a macro, another element type). With unroll = U > 1 a
    thread loads U quads of each array, a grid stride apart, before it adds any (U times the bytes in flight), while
    all U are in range; then one quad at a time."""
    ty, var, gid, bound = head
    arrays = list(dict.fromkeys(re.findall(rf"\b([A-Za-z_]\w*)\s*\[\s*{re.escape(var)}\s*\]", value)))
    kinds = {a: _VECTOR.get(elem_type(p.type), "") if (p := facts.param(a)) is not None and p.pointer else "" for a in arrays}
    macros = set(re.findall(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", source.decode("utf-8", "replace"), re.M))
    if not arrays or not all(kinds.values()) or idents(value) & macros:
        return None
    words = {a: fresh(facts, source, f"{a}_4") for a in arrays}
    terms = []
    for c in "xyzw":
        term = re.sub(rf"\b([A-Za-z_]\w*)\s*\[\s*{re.escape(var)}\s*\]", _lane(words, c), value)
        if re.search(rf"\b{re.escape(var)}\b", term):
            return None
        terms.append(term)
    q, start = fresh(facts, source, "q"), fresh(facts, source, f"{var}0")
    aligned = " | ".join(f"reinterpret_cast<unsigned long long>({a})" for a in arrays)
    stride, nq = "blockDim.x * gridDim.x", f"({bound}) / 4"
    if unroll < 2:
        head_loop = [f"    for ({ty} {q} = {start}; {q} < {nq}; {q} += {stride}) {{"]
    else:
        ahead = re.compile(rf"\b({'|'.join(map(re.escape, words.values()))})\.")
        head_loop = [f"    {ty} {q} = {start};",
                     f"    for (; {q} + {unroll - 1} * ({stride}) < {nq}; {q} += {unroll} * ({stride})) {{",
                     *(f"        const {kinds[a]} {words[a]}_{u} = reinterpret_cast<const {kinds[a]}*>({a})[{q} + {u} * ({stride})];"
                       for u in range(unroll) for a in arrays),
                     *(f"        {acc} += {_nth(ahead, t, u)};"
                       for u in range(unroll) for t in terms),
                     "    }",
                     f"    for (; {q} < {nq}; {q} += {stride}) {{"]
    return [f"{ty} {start} = {gid};",
            f"if ((({aligned}) & 15) == 0) {{",
            *head_loop,
            *(f"        const {kinds[a]} {words[a]} = reinterpret_cast<const {kinds[a]}*>({a})[{q}];" for a in arrays),
            *(f"        {acc} += {t};" for t in terms),
            "    }",
            f"    {start} += ({bound}) / 4 * 4;",
            "}",
            f"for ({ty} {var} = {start}; {var} < ({bound}); {var} += blockDim.x * gridDim.x)",
            f"    {acc} += {value};"]


def _nth(words: re.Pattern[str], term: str, u: int) -> str:
    """A term over the words `a_4.x` as the same term over the u-th round's words `a_4_u.x`."""
    return words.sub(lambda m: f"{m.group(1)}_{u}.", term)
