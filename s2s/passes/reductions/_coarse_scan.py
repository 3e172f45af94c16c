"""block-scan-shuffle{coarsen=F}: a block scan of B values, one per thread, becomes B / F threads scanning F values each
(helpers of one pass).

scan_blocks on an H200: blocks of 1024 threads that each load one float, then scan. Two such blocks fit an SM, so at
most 8 KB per SM are in flight (and none while the blocks scan); the copy bandwidth wants about 19 KB per SM all the
time. With F = 4 a block of 256 threads covers the same 1024 elements: each thread issues its 4 loads at once (unrolled),
and 8 blocks fit an SM, 32 KB in flight. Thread t' takes t = t' + c * (B / F) for c < F, so consecutive threads read and
write consecutive elements in every step (coalesced), and the scan's order is c first, then the warp, then the lane:
each warp scans its F chunks with shuffles, lane 31 stores the chunk totals at S_w[c * (B / F / 32) + warp] (B / 32 of
them, at most 32 for any B up to 1024), one warp scans those, and each chunk adds the totals before it. What follows
the scan runs F times per thread, once for each of its elements, with the statements before the load that it needs.
"""
from __future__ import annotations

import re

from tree_sitter import Node

from s2s.lang.edits import Edit, Refused
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import fresh, indent_of, text
from ._block_scan import declares
from ._coarse_tree import block_size

_EFFECT = re.compile(r"(?<![=!<>+\-*/%&|^])=(?!=)|\+\+|--|\batomic|__syncthreads|__shfl|\breturn\b")
_AFTER = re.compile(r"__syncthreads|__shared__|\breturn\b|\bbreak\b|\bcontinue\b|\bgoto\b|__shfl")


def coarse_scan(source: bytes, facts: KernelFacts, stmts: list[Node], k: int, scan: tuple[str, str, str, str, str],
                tvars: set[str], reads: list[Node], factor: int) -> tuple[Edit, int] | Refused:
    """(the edit from the first statement that moves to the end of the body, the new block size), or why not. stmts[k]
    is the scan loop, stmts[k - 2] the load of `value`; scan = (array S, thread index t, extent B, element type, value);
    reads: S's own-element reads after the loop. Aliases of the thread index and S's declaration inside the edit go."""
    array, t, extent, elem, value = scan
    b = block_size(source, extent)
    if b is None or b % factor or (b // factor) % 32 or not 32 <= b <= 1024:
        return Refused(f"coarsening needs B ({extent}) a known number up to 1024 with B / {factor} a multiple of 32")
    body = source[facts.body_start:facts.body_end].decode("utf-8", "replace")
    if re.search(r"\b(threadIdx|blockDim)\.[yz]\b", body):
        return Refused("coarsening needs a 1-D block")
    after = source[stmts[k].end_byte:stmts[-1].end_byte].decode("utf-8", "replace")
    if _AFTER.search(after):
        return Refused(f"what follows the scan runs {factor} times per thread: no barrier, shuffle, return or jump there")
    names = sorted(tvars | {"threadIdx.x"}, key=len, reverse=True)
    moved: list[Node] = []
    for s in stmts[:k - 2]:
        code = text(source, s)
        if declares(source, s, array) or _alias_only(source, s, tvars):
            continue
        ds = s.children_by_field_name("declarator")
        if s.type != "declaration" or "__shared__" in code or any(
                d.type != "init_declarator" or _EFFECT.search(text(source, d.child_by_field_name("value"))) for d in ds):
            return Refused(f"before the scan's load only declarations with values may compute (they run {factor} times "
                           "per thread)")
        moved.append(s)
    c, tc, v = fresh(facts, source, "c"), fresh(facts, source, f"{t}_c"), fresh(facts, source, f"{array}_v")
    lane, warp, off, up, tot, w, kk = (fresh(facts, source, n) for n in ("lane", "warp", "off", "up", "tot", f"{array}_w", "k"))

    def sub(code: str) -> str:
        code = re.sub(r"\bblockDim\.x\b", f"({extent})", code)
        return re.sub(rf"(?<![\w.])(?:{'|'.join(re.escape(n) for n in names)})\b", tc, code)

    start = stmts[k].end_byte
    post = after
    for r in sorted(reads, key=lambda n: -n.start_byte):
        post = post[: r.start_byte - start] + f"{v}[{c}]" + post[r.end_byte - start:]
    pad = indent_of(source, stmts[k].start_byte)
    per = [f"    const int {tc} = threadIdx.x + {c} * (({extent}) / {factor});", *(f"    {sub(text(source, s))}" for s in moved)]
    warps = f"(({extent}) / {factor} / 32)"

    def scan_of(x: str, at: str) -> list[str]:
        return [f"{at}for (int {off} = 1; {off} < 32; {off} <<= 1) {{", f"{at}    {elem} {up} = __shfl_up_sync(0xffffffffu, {x}, {off});",
                f"{at}    if ({lane} >= {off}) {x} += {up};", f"{at}}}"]
    lines = [f"{elem} {v}[{factor}];", "#pragma unroll", f"for (int {c} = 0; {c} < {factor}; ++{c}) {{", *per,
             f"    {v}[{c}] = {sub(value)};", "}", "{",
             f"    static_assert(({extent}) <= 1024 && ({extent}) % ({factor} * 32) == 0, \"block-scan-shuffle: B\");",
             f"    __shared__ {elem} {w}[32];", f"    const int {lane} = threadIdx.x % 32, {warp} = threadIdx.x / 32;",
             "    #pragma unroll", f"    for (int {c} = 0; {c} < {factor}; ++{c}) {{", *scan_of(f"{v}[{c}]", "        "),
             f"        if ({lane} == 31) {w}[{c} * {warps} + {warp}] = {v}[{c}];", "    }", "    __syncthreads();",
             f"    if ({warp} == 0) {{", f"        {elem} {tot} = {lane} < ({extent}) / 32 ? {w}[{lane}] : ({elem})0;",
             *scan_of(tot, "        "), f"        {w}[{lane}] = {tot};", "    }", "    __syncthreads();",
             "    #pragma unroll", f"    for (int {c} = 0; {c} < {factor}; ++{c}) {{",
             f"        const int {kk} = {c} * {warps} + {warp};", f"        if ({kk} > 0) {v}[{c}] += {w}[{kk} - 1];", "    }", "}",
             "#pragma unroll", f"for (int {c} = 0; {c} < {factor}; ++{c}) {{", *per,
             *(f"    {ln.removeprefix(pad)}" for ln in sub(post).strip("\n").splitlines() if ln.strip()), "}"]
    first = moved[0] if moved else stmts[k - 2]
    return Edit(first.start_byte, stmts[-1].end_byte, ("\n" + pad).join(lines)), b // factor


def _alias_only(source: bytes, decl: Node, tvars: set[str]) -> bool:
    """`int t = threadIdx.x;`: the thread index under another name (every use becomes the element's index)."""
    ds = decl.children_by_field_name("declarator")
    return decl.type == "declaration" and bool(ds) and all(
        d.type == "init_declarator" and text(source, d.child_by_field_name("declarator")) in tvars for d in ds)
