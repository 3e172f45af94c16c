"""allpairs-lanes: `lanes` threads share each body of smem-allpairs' tiled all-pairs loop and add their partial sums.

An all-pairs kernel launches one thread per body: 32768 bodies are 1024 warps, 12% of an H200's warp slots, and
every interaction's latency (a shared load, a special-function reciprocal root) shows (nbody_aos and nbody_soa ran
latency-limited at 12% occupancy). On smem-allpairs' form (a tile loop over `t` staging the arrays in shared memory,
the pair loop `for (int j = t; j < n && j - t < TILE; ++j)` over the tile), the body index becomes the global thread
index / lanes, lane `sub` of each group takes the tile's j = t + sub, t + sub + lanes, ..., every accumulator
(`p -= ...`, `ax += ...`, a local declared with 0 before the loop) is summed over the group with shuffles after the
last tile, and only lane 0 writes. The launch has `lanes` times the threads in blocks of TILE. The sums are added in
another order (lanes partial sums): the MEP's tolerance decides. Refused unless the pair loop writes nothing but its
own locals and the accumulators, and leaves only by its end or `continue`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import body_node, fresh, indent_of, text
from ._pair_loop import EXAMPLE_FORM, accumulators, is_mapping, missing_form, pair_loop

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = EXAMPLE_FORM
EXAMPLE_AFTER = """\
__global__ void potential(const float* x, float* phi, int n)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) / 4;
    const int sub = threadIdx.x % 4;
    const bool live = !(i >= n);
    if (!(0 < (n))) return;
    if (!live) i = (n) - 1;
    float sum = 0.0f;
    __shared__ float x_s[256];
    for (int t = 0; t < n; t += 256) {
        for (int l = threadIdx.x; l < 256 && l < n - t; l += blockDim.x) x_s[l] = x[t + l];
        __syncthreads();
        for (int j = t + sub; j < n && j - t < 256; j += 4) {
            if (j == i) continue;
            sum += 1.0f / fabsf(x[i] - x_s[j - t]);
        }
        __syncthreads();
    }
    for (int off = 4 / 2; off > 0; off /= 2)
        sum += __shfl_down_sync(0xffffffffu, sum, off, 4);
    if (live && sub == 0) {
        phi[i] = sum;
    }
}
"""

@dataclass(frozen=True)
class AllpairsLanes:
    name: ClassVar[str] = "allpairs-lanes"
    WHY_IT_EXISTS: ClassVar[str] = "n-body loops with too few bodies to fill the GPU (the zoo's nbody_aos, nbody_soa)"
    priority: ClassVar[int] = 85  # after smem-allpairs (80), whose form it needs
    space: ClassVar[tuple[str, ...]] = ("allpairs-lanes{lanes=4}", "allpairs-lanes{lanes=8}")
    lanes: int = 4

    def applies(self, facts: KernelFacts) -> bool | str:
        if self.lanes not in {2, 4, 8, 16, 32}:
            return "lanes must be a power of two up to 32"
        if facts.dialect == "opencl":
            return "warp shuffles have no portable OpenCL 1.2 equivalent"
        return missing_form(facts) or True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        body, i, k = body_node(source, facts), facts.var_for("x"), self.lanes
        found = pair_loop(source, body)
        if isinstance(found, str):
            return Refused(found)
        pair, tile_loop, scope, tile = found.loop, found.tile_loop, found.scope, found.tile
        if tile % 32 or tile % k:
            return Refused(f"the tile ({tile}) must be a multiple of 32 and of the lanes")
        mapping = next((s for s in body.named_children if is_mapping(source, s, i)), None)
        if mapping is None:
            return Refused(f"needs `int {i} = blockIdx.x * blockDim.x + threadIdx.x;` in the kernel body")
        accs = accumulators(source, [*body.named_children, *scope.named_children], pair)
        if isinstance(accs, str):
            return Refused(accs)
        later = [s for s in (body if scope == body else scope).named_children if s.start_byte > tile_loop.end_byte]
        if scope != body and any(s.start_byte > scope.end_byte for s in body.named_children):
            return Refused("statements after the block that holds the tile loop")
        if re.search(r"\bthreadIdx|\b__syncthreads", "".join(text(source, s) for s in later)):
            return Refused("thread indices or barriers after the tile loop")
        guard = next((s for s in later if s.type == "if_statement" and re.fullmatch(r"\(\s*live\s*\)", text(source, s.child_by_field_name("condition")))), None)
        if guard is None or any(s is not guard and s.type != "comment" for s in later):
            return Refused("everything after the tile loop must be one `if (live) { ... }`")
        cond = guard.child_by_field_name("condition")
        assert cond is not None
        sub, off = fresh(facts, source, "sub"), fresh(facts, source, "off")
        value = mapping.child_by_field_name("declarator").child_by_field_name("value")  # type: ignore[union-attr]
        init = pair.child_by_field_name("initializer").child_by_field_name("declarator").child_by_field_name("value")  # type: ignore[union-attr]
        step = pair.child_by_field_name("update")
        if value is None or init is None or step is None:
            return Refused("unexpected mapping or pair-loop header")
        pad = indent_of(source, tile_loop.start_byte)
        reduce = "".join(f"\n{pad}for (int {off} = {k} / 2; {off} > 0; {off} /= 2)\n{pad}    "
                         f"{a} += __shfl_down_sync(0xffffffffu, {a}, {off}, {k});" for a in accs)
        edits = (Edit(value.start_byte, value.end_byte, f"({text(source, value)}) / {k}"),
                 Edit(mapping.end_byte, mapping.end_byte, f"\n{indent_of(source, mapping.start_byte)}const int {sub} = threadIdx.x % {k};"),
                 Edit(init.end_byte, init.end_byte, f" + {sub}"),
                 Edit(step.start_byte, step.end_byte, f"{found.j} += {k}"),
                 Edit(tile_loop.end_byte, tile_loop.end_byte, reduce),
                 Edit(cond.start_byte, cond.end_byte, f"(live && {sub} == 0)"))
        return Rewrite(edits, LaunchChange((tile, 1, 1), "rows-per-warp", per_item=k),
                       f"{k} lanes per body over each tile, shuffle sums of {', '.join(accs)}")
