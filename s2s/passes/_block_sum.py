"""One atomic per block: the block's threads add their values with warp shuffles and shared memory, thread 0 adds the
block's sum to the target (helpers of atomic-accumulate and warp-reduce-atomics).

Any block shape works: the flat thread index counts x fastest, the last warp of a block may be partial (its shuffle
mask names the lanes that exist and no lane adds a value from a lane that does not), and the first warp adds the
warps' sums the same way. Every thread of the block must reach the code: it holds a barrier.
"""
from __future__ import annotations

from s2s.lang.kernel_facts import KernelFacts

from ._common import fresh


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
