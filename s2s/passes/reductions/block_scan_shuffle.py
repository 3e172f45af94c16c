"""block-scan-shuffle: a block's Hillis-Steele prefix sum in shared memory becomes warp shuffles and one warp of totals.

Shape: a top-level statement loads one value per thread, `S[..][t] = e;` (t being threadIdx.x, S a `__shared__` array,
single- or double-buffered, `S[p * B + t]` too), then `__syncthreads();` and a loop doubling from 1 below B (`for (off = 1;
off < B; off <<= 1)`) that reads `S[..][t - off]` under `t >= off`, adds it, writes only S[..][t] and synchronizes. After it
the loop leaves the inclusive sum of the loaded values of threads 0..t in S[..][t] (in whichever buffer), so what follows
may only read a thread's own element: those reads become the scanned register. Each warp scans its 32 values with
`__shfl_up_sync`, lane 31 stores the warp's total, the first warp scans the B / 32 totals the same way, and each warp adds
the totals of the warps before it: 2 barriers instead of 2 log2(B), no bank traffic for S. B must be a multiple of 32 up
to 1024, a compile-time constant (a `static_assert` checks it), and the block must hold B threads in x, as the loop's
bound already assumes. Sums are added in another order (within the MEP's tolerance). With `coarsen=F` the block has B / F
threads that load and scan F elements each (passes/reductions/_coarse_scan.py): F times the loads in flight per thread.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import body_node, fresh, indent_of, statements, text
from ._block_scan import (
    aliases,
    declares,
    element_type,
    hillis_steele,
    load_value,
    own_reads,
    shared_names,
    whole_lines,
)
from ._coarse_scan import coarse_scan

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
#define B 1024
__global__ void scan_blocks(const float* in, float* out)
{
    __shared__ float buf[2][B];
    int t = threadIdx.x;
    int g = blockIdx.x * B + t;
    int src = 0;
    buf[0][t] = in[g];
    __syncthreads();
    for (int off = 1; off < B; off <<= 1) {
        float v = buf[src][t];
        if (t >= off)
            v += buf[src][t - off];
        buf[1 - src][t] = v;
        src = 1 - src;
        __syncthreads();
    }
    out[g] = buf[src][t];
}
"""
EXAMPLE_AFTER = """\
#define B 1024
__global__ void scan_blocks(const float* in, float* out)
{
    int t = threadIdx.x;
    int g = blockIdx.x * B + t;
    int src = 0;
    float buf_v = in[g];
    {
        static_assert((B) >= 32 && (B) <= 1024 && (B) % 32 == 0, "block-scan-shuffle: B");
        __shared__ float buf_w[32];
        const int lane = (t) % 32, warp = (t) / 32;
        for (int off1 = 1; off1 < 32; off1 <<= 1) {
            float up = __shfl_up_sync(0xffffffffu, buf_v, off1);
            if (lane >= off1) buf_v += up;
        }
        if (lane == 31) buf_w[warp] = buf_v;
        __syncthreads();
        if (warp == 0) {
            float tot = lane < (B) / 32 ? buf_w[lane] : (float)0;
            for (int off1 = 1; off1 < 32; off1 <<= 1) {
                float up = __shfl_up_sync(0xffffffffu, tot, off1);
                if (lane >= off1) tot += up;
            }
            buf_w[lane] = tot;
        }
        __syncthreads();
        if (warp > 0) buf_v += buf_w[warp - 1];
    }
    out[g] = buf_v;
}
"""

@dataclass(frozen=True)
class BlockScanShuffle:
    name: ClassVar[str] = "block-scan-shuffle"
    WHY_IT_EXISTS: ClassVar[str] = "the textbook Hillis-Steele block prefix sum in shared memory, as warp shuffles"
    priority: ClassVar[int] = 45  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("block-scan-shuffle", "block-scan-shuffle{coarsen=4}")
    coarsen: int = 1  # elements per thread: B / coarsen threads scan the block's B values (_coarse_scan.py)

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.dialect == "opencl":
            return "warp shuffles have no portable OpenCL 1.2 equivalent"
        if not facts.shared:
            return "no shared-memory array to scan"
        if self.coarsen not in {1, 2, 4, 8}:
            return "coarsen must be 1, 2, 4 or 8"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        body = body_node(source, facts)
        stmts = statements(body)
        tvars = {"threadIdx.x"} | {v for s in stmts if s.type == "declaration" for v in aliases(source, s)}
        why = "needs a top-level loop `for (off = 1; off < B; off <<= 1)` reading S[t - off] of a __shared__ array S"
        for k, loop in enumerate(stmts):
            if loop.type != "for_statement" or k < 2 or text(source, stmts[k - 1]) != "__syncthreads();":
                continue
            found = hillis_steele(source, loop, shared_names(facts), tvars)
            if isinstance(found, str):
                why = found
                continue
            array, t, b = found
            load = load_value(source, stmts[k - 2], array, t)
            if isinstance(load, Refused):
                return load
            named = set(re.findall(r"[A-Za-z_]\w*", b)) & ({p.name for p in facts.params} | set(facts.locals))
            if re.search(r"\b(blockDim|gridDim|threadIdx|blockIdx)\b", b) or named:
                return Refused(f"the scan's extent {b} must be a compile-time constant (the shuffles need a multiple of 32 "
                               "up to 1024, checked by a static_assert)")
            if re.search(r"\breturn\b", source[facts.body_start : loop.start_byte].decode("utf-8", "replace")):
                return Refused("a return before the scan: every thread of the block must reach the shuffles")
            if any(re.search(rf"\b{array}\b", text(source, s)) for s in stmts[: k - 2] if not declares(source, s, array)):
                return Refused(f"{array} is used before its load: the scan must start from one value per thread")
            decl = next((s for s in stmts[: k - 2] if declares(source, s, array)), None)
            elem = element_type(source, decl, array) if decl is not None else None
            if decl is None or elem is None:
                return Refused(f"{array} must be a __shared__ array declared in the kernel")
            v = fresh(facts, source, f"{array}_v")
            reads = own_reads(source, stmts[k + 1 :], array, t, loop)
            if isinstance(reads, str):
                return Refused(reads)
            note = f"warp-shuffle scan instead of the shared-memory Hillis-Steele scan over {array}"
            if self.coarsen > 1:
                coarse = coarse_scan(source, facts, stmts, k, (array, t, b, elem, load), tvars, reads, self.coarsen)
                if isinstance(coarse, Refused):
                    return coarse
                edit, block = coarse
                gone = (Edit(*whole_lines(source, decl), ""),) if decl.end_byte <= edit.start else ()  # S is no longer used
                return Rewrite((*gone, edit), LaunchChange((block, 1, 1), "same"), f"{note}, {self.coarsen} elements a thread")
            edits = (Edit(*whole_lines(source, decl), ""),  # S is no longer used
                     Edit(stmts[k - 2].start_byte, loop.end_byte, self._code(source, facts, stmts[k - 2], load, v, t, b, elem, array)),
                     *(Edit(r.start_byte, r.end_byte, v) for r in reads))
            return Rewrite(edits, None, note)
        return Refused(why)

    def _code(self, source: bytes, facts: KernelFacts, at: Node, value: str, v: str, t: str, b: str, elem: str, array: str) -> str:
        off, up, tot = fresh(facts, source, "off"), fresh(facts, source, "up"), fresh(facts, source, "tot")
        lane, warp, w = fresh(facts, source, "lane"), fresh(facts, source, "warp"), fresh(facts, source, f"{array}_w")

        def scan(x: str, pad: str) -> list[str]:
            return [f"{pad}for (int {off} = 1; {off} < 32; {off} <<= 1) {{",
                    f"{pad}    {elem} {up} = __shfl_up_sync(0xffffffffu, {x}, {off});",
                    f"{pad}    if ({lane} >= {off}) {x} += {up};",
                    f"{pad}}}"]
        lines = [f"{elem} {v} = {value};",
                 "{",
                 f"    static_assert(({b}) >= 32 && ({b}) <= 1024 && ({b}) % 32 == 0, \"block-scan-shuffle: B\");",
                 f"    __shared__ {elem} {w}[32];",
                 f"    const int {lane} = ({t}) % 32, {warp} = ({t}) / 32;",
                 *scan(v, "    "),
                 f"    if ({lane} == 31) {w}[{warp}] = {v};",
                 "    __syncthreads();",
                 f"    if ({warp} == 0) {{",
                 f"        {elem} {tot} = {lane} < ({b}) / 32 ? {w}[{lane}] : ({elem})0;",
                 *scan(tot, "        "),
                 f"        {w}[{lane}] = {tot};",
                 "    }",
                 "    __syncthreads();",
                 f"    if ({warp} > 0) {v} += {w}[{warp} - 1];",
                 "}"]
        return ("\n" + indent_of(source, at.start_byte)).join(lines)
