"""launch-config: a different block shape with the same global thread coverage; the kernel text is unchanged.

Smaller 1-D blocks (32, 64 threads) spread an underfilled launch over more SMs; they are `speculative` steps: the search tries
them only where the cost model predicts them faster (s2s.optimize.search)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.launch_memory import host_sized

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void scale(float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""
EXAMPLE_AFTER = EXAMPLE_BEFORE  # only the launch changes: block (128, 1, 1), grid = ceil(threads / 128)


@dataclass(frozen=True)
class LaunchConfig:
    name: ClassVar[str] = "launch-config"
    priority: ClassVar[int] = 170  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = (
        "launch-config{block=128}",
        "launch-config{block=512}",
        "launch-config{block=32x8}",
        "launch-config{block=32x4}",
        "launch-config{block=64x2x2}",
        "launch-config{block=32x4x2}",
        "launch-config{block=64}",
        "launch-config{block=32}",
    )
    # More, smaller blocks only help a launch that leaves SMs without a block (s2s.lang.kernel_model.parallelism:
    # trsm_cols's 64 blocks of 128 on 132 SMs); elsewhere they cost an evaluation for nothing, or occupancy (32 threads:
    # 32 blocks x 32 = half an SM's threads). The search keeps a speculative step only where the cost model predicts
    # it faster than the pipeline without it (s2s.optimize.search, for any pass that declares steps speculative).
    speculative: ClassVar[frozenset[str]] = frozenset({"launch-config{block=64}", "launch-config{block=32}"})
    block: tuple[int, ...] = (128,)

    def applies(self, facts: KernelFacts) -> bool | str:
        dims = len([b for b in self.block if b > 1]) or 1
        threads = 1
        for b in self.block:
            threads *= b
        if not 1 <= len(self.block) <= 3 or threads > 1024 or threads % 32:
            return f"block {self.block} must have 1-3 dimensions and a multiple of 32 threads, at most 1024"
        if any("DYNAMIC" in d for d in facts.shared):
            return "dynamic shared memory: its size is the launch's, set for the current block"
        if facts.shared and facts.shape_bound_loops:
            return (f"shared memory sized for the current block ({facts.shape_bound_loops} is used outside a global index or "
                    "a block-strided loop)")
        bound = re.search(r"\(\s*(\d+)", facts.launch_bounds)
        if bound and threads > int(bound.group(1)):
            return f"__launch_bounds__ allows at most {bound.group(1)} threads per block"
        if facts.dims and dims > max(facts.dims, 1):
            return f"a {dims}-D block for a kernel with a {facts.dims}-D thread mapping"
        if facts.dims == 0:
            return "no global thread index: the kernel may depend on the block shape"
        if facts.shape_bound_loops:  # block-strided loops (`for (b = threadIdx.x; b < E; b += blockDim.x)`) cover E with any 1-D block
            return (f"{facts.shape_bound_loops} is used on its own, not only in blockIdx*blockDim+threadIdx: the kernel's work depends "
                    "on the block shape (Parboil's stencil: i = threadIdx.x, j = blockIdx.x + 1)")
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        host = host_sized(source, facts)
        if host:
            return Refused(host)
        block = (tuple(self.block) + (1, 1, 1))[:3]
        shape = (block[0], block[1], block[2])
        return Rewrite((), LaunchChange(shape, "same-coverage"), f"block {'x'.join(map(str, self.block))}")

