"""allpairs-bodies: each thread of smem-allpairs' tiled all-pairs loop computes `bodies` bodies, so that every element
of the shared tile is read once for all of them (the i side of the pair loop held in registers).

The n-body kernels' tiled form spends a shared-memory load per array per interaction (nbody_soa's best form: 4 LDS
for ~8 FP instructions, "memory-limited" on shared loads). On smem-allpairs' guarded form (`live`, the index clamped
to n - 1, one `if (live) { ... }` after the tile loop) thread i takes bodies i*B, ..., i*B + B-1: the index, `live`,
every local declared before the loop from the index or an accumulator, and each read-only `A[i]` of the pair body
(read once into a register) are declared once a body; the pair body is repeated once a body (in `do { } while (0)`
where it has `continue`, so that a skip ends that body's copy only) and so is the code after the loop, under each
body's own `live`. The launch has 1/B of the threads. Each body adds its pairs in the same order as before: results
are bit for bit the same. Apply it before allpairs-lanes (which then splits each group's tile among lanes).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import body_node, indent_of, text
from ._allpairs_copies import copies_of
from ._allpairs_skip import SKIPS
from ._pair_loop import EXAMPLE_FORM, is_mapping, missing_form

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = EXAMPLE_FORM
EXAMPLE_AFTER = """\
__global__ void potential(const float* x, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int i_0 = i * 2 + 0, i_1 = i * 2 + 1;
    const bool live_0 = !(i_0 >= n), live_1 = !(i_1 >= n);
    const bool live = live_0;
    if (!(0 < (n))) return;
    if (!live_0) i_0 = (n) - 1;
    if (!live_1) i_1 = (n) - 1;
    const float x_i_0 = x[i_0];
    const float x_i_1 = x[i_1];
    float sum_0 = 0.0f;
    float sum_1 = 0.0f;
    __shared__ float x_s[256];
    for (int t = 0; t < n; t += 256) {
        for (int l = threadIdx.x; l < 256 && l < n - t; l += blockDim.x) x_s[l] = x[t + l];
        __syncthreads();
        for (int j = t; j < n && j - t < 256; ++j) {
            do {
                if (j == i_0) continue;
                sum_0 += 1.0f / fabsf(x_i_0 - x_s[j - t]);
            } while (0);
            do {
                if (j == i_1) continue;
                sum_1 += 1.0f / fabsf(x_i_1 - x_s[j - t]);
            } while (0);
        }
        __syncthreads();
    }
    if (live) {
        if (live_0) {
            phi[i_0] = sum_0;
        }
        if (live_1) {
            phi[i_1] = sum_1;
        }
    }
}
"""
_LIVE = re.compile(r"const\s+bool\s+(\w+)\s*=\s*(.+);", re.S)
_CLAMP = re.compile(r"if\s*\(\s*!\s*(\w+)\s*\)\s*(\w+)\s*=\s*(.+);", re.S)


@dataclass(frozen=True)
class AllpairsBodies:
    name: ClassVar[str] = "allpairs-bodies"
    WHY_IT_EXISTS: ClassVar[str] = "n-body loops after smem-allpairs, limited by shared loads (the zoo's nbody_soa)"
    priority: ClassVar[int] = 83  # after smem-allpairs (80), whose form it needs; before allpairs-lanes (85)
    space: ClassVar[tuple[str, ...]] = ("allpairs-bodies{bodies=2},allpairs-lanes{lanes=8}",
                                        "allpairs-bodies{bodies=4 skip=select},allpairs-pack,allpairs-lanes{lanes=8}",
                                        "allpairs-bodies{bodies=4},allpairs-lanes{lanes=16}")
    bodies: int = 2
    skip: str = "branch"  # the pair body's `if (j == i) continue;`: kept, a select (`select`) or undone after (`subtract`)

    def applies(self, facts: KernelFacts) -> bool | str:
        if not 1 <= self.bodies <= 8 or self.skip not in SKIPS:
            return f"bodies must be from 1 to 8, skip one of {', '.join(SKIPS)}"
        if facts.dialect == "opencl":
            return "CUDA/HIP only (smem-allpairs' form)"
        return missing_form(facts) or True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        body, i, b = body_node(source, facts), facts.var_for("x"), self.bodies
        top = [s for s in body.named_children if s.type != "comment"]
        at = next((k for k, s in enumerate(top) if is_mapping(source, s, i, unsigned=True)), None)
        if at is None:
            return Refused(f"needs `int {i} = blockIdx.x * blockDim.x + threadIdx.x;` in the kernel body (allpairs-lanes "
                           "must come after allpairs-bodies)")
        heads = [text(source, s) for s in top[at + 1 : at + 4]]
        live, clamp = _LIVE.fullmatch(heads[0]) if heads else None, _CLAMP.fullmatch(heads[2]) if len(heads) == 3 else None
        if live is None or clamp is None or clamp.group(1) != live.group(1) or clamp.group(2) != i or \
                not re.fullmatch(r"if\s*\(\s*!\s*\(\s*0\s*<.*\)\s*\)\s*return\s*;", heads[1], re.S):
            return Refused(f"needs smem-allpairs' guarded form (`const bool live = ...;`, `{i}` clamped to n - 1) after the mapping")
        copies = copies_of(source, facts, body, top[at + 4 :], i, live.group(1), b, self.skip)
        if isinstance(copies, str):
            return Refused(copies)
        ty = text(source, top[at]).split()[0] if text(source, top[at]).startswith("int") else "unsigned"
        pad = indent_of(source, top[at + 1].start_byte)
        n = copies.names
        header = "\n".join([
            f"{ty} " + ", ".join(f"{n[i][r]} = {i} * {b} + {r}" for r in range(b)) + ";",
            "const bool " + ", ".join(f"{n[live.group(1)][r]} = {copies.rename(live.group(2), r)}" for r in range(b)) + ";",
            f"const bool {live.group(1)} = {n[live.group(1)][0]};", heads[1],
            *(f"if (!{n[live.group(1)][r]}) {n[i][r]} = {clamp.group(3)};" for r in range(b)),
            *(f"const {t} {n[h][r]} = {a}[{n[i][r]}];" for h, (a, t) in copies.loads.items() for r in range(b))])
        edits = [Edit(top[at + 1].start_byte, top[at + 3].end_byte, header.replace("\n", "\n" + pad)), *copies.edits]
        return Rewrite(tuple(edits), LaunchChange(None, "coarsen-x", per_item=b),
                       f"{b} bodies a thread, each tile element read once for all: {', '.join(sorted(set(n) - {i}))}")

