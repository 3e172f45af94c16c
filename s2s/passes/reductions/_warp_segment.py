"""block-reduce-shuffle{warps=W}: each block's B elements reduced by one warp, W such warps a block (helpers of one pass).

dot_blocks on an H200 (N = 2^24, B = 256): the coarsened tree (coarsen=4) leaves every block a shared-memory store, a
barrier and two shuffle stages between its loads and its one partial, 45.3 us against a 31.5 us copy floor. Here the
warp that owns original block s reads the block's B elements itself: lane l takes elements l, l + 32, ... (or, where
the value is `A[i] * B[i]`-like at i = s * B + t, the segment lies inside the guard and every array starts 16-byte
aligned for this segment, checked at run time, the quads 4 (l + 32 h)..+3 as float4/int4 words), combines them in
registers and reduces the 32 lane values with `__shfl_xor_sync`, so every lane holds the block's value and runs what
followed the tree with `S[0]` that value, `blockIdx.x` the segment and the thread index the lane (it may only be
compared with 0: lane 0 stores). No shared memory, no barrier. Hand probe on the H200: 34.56 us with W = 8 (91% of
the floor). Sums are added in another order (within the MEP's tolerance); maxima and minima are exact.

The launch: W warps a block, grid ceil(G / W) (rule coarsen-x by B / 32 with a block of 32 W). Warps past the G
original blocks must do nothing, but G is not known inside the kernel: with W > 1 the value must be guarded by
`i < BOUND ? ... : ...` on i = blockIdx.x * B + t, and a warp whose segment starts at or past BOUND returns (the
original launch covers ceil(BOUND / B) blocks; another grid shows up in the MEP's checks). W = 1 keeps the grid.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.thread_index import elem_type
from ..common.tree import fresh, indent_of, text
from ._coarse_tree import Prefix, block_size, per_element, prefix

_WORDS = {"float": "float4", "int": "int4", "unsigned": "uint4", "unsigned int": "uint4"}


def warp_segments(source: bytes, facts: KernelFacts, stmts: list[Node], k: int, tree: tuple[str, str, str, str],
                  tvars: set[str], elem: str, warps: int) -> Rewrite | Refused:
    """The kernel body from its first statement on, one warp a block's segment; or why not. stmts[k] is the tree."""
    array, op, t, extent = tree
    b = block_size(source, extent)
    if b is None or b & (b - 1) or not 32 <= b <= 1024:
        return Refused(f"one warp a block needs B ({extent}) a known power of two from 32 to 1024")
    if facts.launch_bounds and 32 * warps > b:
        return Refused(f"__launch_bounds__ allows the original {b} threads, fewer than {warps} warps")
    p = prefix(source, facts, stmts, k, tree, tvars, "to run them once per element of a warp's segment")
    if isinstance(p, Refused):
        return p
    after = source[stmts[k + 1].start_byte:stmts[-1].end_byte].decode("utf-8", "replace") if k + 1 < len(stmts) else ""
    body = source[facts.body_start:facts.body_end].decode("utf-8", "replace")
    if len(facts.shared) != 1 or re.search(r"__syncthreads|__shfl", after):
        return Refused("one warp a block needs the tree's array the kernel's only shared memory and no barrier or shuffle "
                       "after the tree (the block's warps no longer share a block's work)")
    if re.search(rf"\b{re.escape(array)}\s*\[\s*0\s*\]\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)", after):
        return Refused(f"{array}[0] is written after the tree")
    if warps > 1 and re.search(r"\bgridDim\b|\bblockIdx\.[yz]\b", body):
        return Refused("a block of several warps needs a 1-D grid and no gridDim (the grid shrinks)")
    lane, seg, v, off = (fresh(facts, source, w) for w in ("lane", "seg", "v", "off"))
    index = _segment_index(p, source, extent)
    bound = compared_bound(p.value, index, p.names)
    if warps > 1 and bound is None:
        return Refused("a block of several warps needs the value guarded as `i < BOUND ? ... : ...` with i = "
                       "blockIdx.x * B + t (the number of original blocks is not known in the kernel); warps=1 keeps the grid")

    def both(a: str, c: str) -> str:
        return f"{a} + {c}" if op == "+" else f"{op}({a}, {c})"

    def to_warp(code: str) -> str:
        return re.sub(r"\bblockIdx\.x\b", seg, code)

    tc, c, e = (fresh(facts, source, w) for w in (f"{t}_c" if t.isidentifier() else "t_c", "c", "e"))
    scalar = ["#pragma unroll", f"for (int {c} = 0; {c} < ({extent}) / 32; ++{c}) {{",
              f"    const int {tc} = {lane} + 32 * {c};",
              *(f"    {to_warp(per_element(source, s, p.names, extent, tc))}" for s in p.moved),
              f"    const {elem} {e} = {to_warp(per_element(source, p.value, p.names, extent, tc))};",
              f"    {v} = {c} == 0 ? {e} : {both(v, e)};", "}"]
    words = _words(source, facts, p, index, bound, b, seg, lane, v, both) if index is not None else None
    lines = [f"static_assert(({extent}) >= 32 && ({extent}) <= 1024 && (({extent}) & (({extent}) - 1)) == 0, "
             "\"block-reduce-shuffle: B\");",
             f"const int {lane} = threadIdx.x % 32;",
             f"const int {seg} = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;  // the original block"]
    if warps > 1 and bound is not None:
        lines.append(f"if ({seg} * ({extent}) >= ({bound[0]})) return;  // past the original grid")
    lines.append(f"{elem} {v};")
    lines += [*words, *("    " + s for s in scalar), "}"] if words is not None else scalar
    lines += [f"for (int {off} = 16; {off} > 0; {off} >>= 1)",
              f"    {v} = {both(v, f'__shfl_xor_sync(0xffffffffu, {v}, {off})')};"]
    names = "|".join(re.escape(n) for n in p.names)
    tail = re.sub(rf"(?<![\w.])(?:{names})\b", lane, to_warp(re.sub(rf"\b{re.escape(array)}\s*\[\s*0\s*\]", v, after)))
    pad = "\n" + indent_of(source, stmts[0].start_byte)
    code = pad.join(lines) + (pad + tail if tail else "")
    note = f"one warp per block of {extent} ({warps} a block), {'words where aligned, ' if words else ''}no shared memory"
    return Rewrite((Edit(stmts[0].start_byte, stmts[-1].end_byte, code),),
                   LaunchChange((32 * warps, 1, 1), "coarsen-x", per_item=b // 32), note)


def _segment_index(p: Prefix, source: bytes, extent: str) -> str | None:
    """The name i of the one moved declaration `int i = blockIdx.x * B + t;` (B the extent or blockDim.x), else None."""
    if len(p.moved) != 1:
        return None
    m = re.fullmatch(r"(?:const\s+)?(?:int|unsigned|unsigned\s+int)\s+(\w+)\s*=\s*(.+);", text(source, p.moved[0]).strip(), re.S)
    if m is None:
        return None
    flat = re.sub(r"[\s()]", "", m.group(2))
    forms = {f"{a}{op}{x}" for bs in (re.sub(r"[\s()]", "", extent), "blockDim.x") for t in p.names
             for a, op, x in ((f"blockIdx.x*{bs}", "+", t), (f"{bs}*blockIdx.x", "+", t), (t, "+", f"blockIdx.x*{bs}"),
                              (t, "+", f"{bs}*blockIdx.x"))}
    return m.group(1) if flat in forms else None


def compared_bound(value: str, index: str | None, names: set[str]) -> tuple[str, str] | None:
    """(BOUND, TERM) of `i < BOUND ? TERM : ...`, BOUND the same for every thread; None otherwise."""
    m = re.fullmatch(r"\s*\(?\s*(\w+)\s*<\s*([^?:]+?)\s*\)?\s*\?([^?:]+):([^?:]+)", value, re.S)
    if m is None or index is None or m.group(1) != index:
        return None
    if re.search(rf"\b(?:{re.escape(index)}|threadIdx|blockIdx)\b", m.group(2)) or any(
            re.search(rf"(?<![\w.]){re.escape(n)}\b", m.group(2)) for n in names):
        return None
    return m.group(2).strip(), m.group(3).strip()


def _words(source: bytes, facts: KernelFacts, p: Prefix, index: str, bound: tuple[str, str] | None, b: int, seg: str,
           lane: str, v: str, both: Callable[[str, str], str]) -> list[str] | None:
    """(the head and body of the word path, opened `if (...) { ... } else {`), or None where the value does not qualify:
    every array read at [i] only, 4-byte elements of one word type, B a multiple of 128."""
    term = bound[1] if bound is not None else p.value
    if b % 128 or "?" in term:
        return None
    arrays = list(dict.fromkeys(re.findall(rf"\b(\w+)\s*\[\s*{re.escape(index)}\s*\]", term)))
    types = [elem_type(f.type) if (f := facts.param(a)) is not None and f.pointer else "" for a in arrays]
    if not arrays or any(ty not in _WORDS for ty in types):
        return None
    h, q0, q = (fresh(facts, source, w) for w in ("h", f"{index}0", "q"))
    named = {a: fresh(facts, source, f"{a}_w") for a in arrays}

    def quad(part: str) -> str:
        return re.sub(rf"\b(\w+)\s*\[\s*{re.escape(index)}\s*\]", lambda m: f"{named[m.group(1)]}.{part}", term)

    parts = [quad(x) for x in "xyzw"]
    if any(re.search(rf"\b(?:{re.escape(index)}|threadIdx|blockIdx|blockDim)\b|\[", x) for x in parts) or \
            any(re.search(rf"(?<![\w.]){re.escape(n)}\b", parts[0]) for n in p.names):
        return None
    whole = f"{q0} + {b} <= ({bound[0]}) && " if bound is not None else ""
    aligned = " | ".join(f"reinterpret_cast<unsigned long long>({a} + {q0})" for a in arrays)
    loads = [f"        const {_WORDS[ty]} {named[a]} = *reinterpret_cast<const {_WORDS[ty]}*>({a} + {q});" for a, ty in zip(arrays, types)]
    combined = both(f"({both(parts[0], parts[1])})", f"({both(parts[2], parts[3])})")
    return [f"const int {q0} = {seg} * {b};", f"if ({whole}(({aligned}) & 15) == 0) {{", "    #pragma unroll",
            f"    for (int {h} = 0; {h} < {b // 128}; ++{h}) {{", f"        const int {q} = {q0} + 4 * ({lane} + 32 * {h});", *loads,
            f"        {v} = {h} == 0 ? {combined} : {both(v, f'({combined})')};", "    }", "} else {"]
