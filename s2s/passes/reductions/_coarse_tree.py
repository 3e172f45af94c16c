"""block-reduce-shuffle{coarsen=F}: a block of B threads that each store one value S[t] before the tree becomes a block
of B / F threads that each combine F values in registers, then shuffle (helpers of one pass).

dot_blocks on an H200: 65536 blocks of 256 threads, each block reading 2 KB (two floats per thread) and then running a
tree with a barrier per level. An SM holds 8 such blocks (2048 threads), so at most 16 KB per SM are in flight and
none while a block reduces; the copy bandwidth (4.2 TB/s at about 600 ns latency) wants more than 2.5 MB in flight over
132 SMs, about 19 KB per SM, all the time. With F = 4 the same block covers its 256 elements with 64 threads, each
issuing its 8 loads at once (unrolled), and 32 blocks fit an SM (its block limit): 64 KB in flight per SM, four times
fewer shuffles and no shared-memory store before the tree. The block-to-output mapping stays: the block still owns
elements blockIdx.x * B .. + B, and its thread 0 still runs what follows the tree.

Thread t' takes t = t' + c * (B / F) for c < F: consecutive threads read consecutive elements in every step
(coalesced). The launch must have been B threads along x (the tree over S[0..B) needs them): the block becomes B / F.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from s2s.lang.cexpr import try_evaluate
from s2s.lang.edits import Refused
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import fresh, text

_OBJ_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]+?)[ \t]*$", re.M)
_EFFECT = re.compile(r"(?<![=!<>+\-*/%&|^])=(?!=)|\+\+|--|\batomic|__syncthreads|__shfl|\breturn\b")


def block_size(source: bytes, extent: str) -> int | None:
    """The tree's extent B as a number, through the file's object-like macros."""
    objects = {m.group(1): m.group(2) for m in _OBJ_MACRO.finditer(source.decode("utf-8", "replace"))}
    value = try_evaluate(extent, objects.get)
    return int(value) if isinstance(value, int) else None


@dataclass(frozen=True)
class Prefix:
    """What a block computes before its tree: `moved` declarations and one `S[t] = value;`, run once per element."""
    start: int  # first byte of the moved statements (through the tree's barrier they are replaced)
    moved: list[Node]
    value: str
    names: set[str]  # the thread index and its aliases
    base: str  # the alias that names the thread (threadIdx.x where none)


def coarse_prefix(source: bytes, facts: KernelFacts, stmts: list[Node], k: int, tree: tuple[str, str, str, str],
                  tvars: set[str], elem: str, factor: int) -> tuple[int, list[str], str, int] | Refused:
    """(start byte of the moved statements, the lines that replace them through the tree's barrier, the register holding
    each thread's combined value, the new block size); or why not. `tree` = (array, op, t, B); stmts[k] is the tree."""
    array, op, t, extent = tree
    b = block_size(source, extent)
    if b is None or b % factor or (b // factor) & (b // factor - 1) or not 32 <= b // factor <= 1024:
        return Refused(f"coarsening needs B ({extent}) a known number with B / {factor} a power of two from 32 to 1024")
    p = prefix(source, facts, stmts, k, tree, tvars, f"to run them {factor} times per thread")
    if isinstance(p, Refused):
        return p
    acc, c, tc, e = (fresh(facts, source, w) for w in ("acc", "c", f"{t}_c" if t.isidentifier() else "t_c", "e"))
    both = f"{acc} + {e}" if op == "+" else f"{op}({acc}, {e})"
    lines = [f"{elem} {acc};", "#pragma unroll", f"for (int {c} = 0; {c} < {factor}; ++{c}) {{",
             f"    const int {tc} = {p.base} + {c} * (({extent}) / {factor});",
             *(f"    {per_element(source, s, p.names, extent, tc)}" for s in p.moved),
             f"    const {elem} {e} = {per_element(source, p.value, p.names, extent, tc)};",
             f"    {acc} = {c} == 0 ? {e} : {both};", "}"]
    return p.start, lines, acc, b // factor


def per_element(source: bytes, code: Node | str, names: set[str], extent: str, tc: str) -> str:
    """A moved statement or the stored value for the element `tc` of the block's B (blockDim.x is B: the block changes)."""
    out = re.sub(r"\bblockDim\.x\b", f"({extent})", code if isinstance(code, str) else text(source, code))
    return re.sub(rf"(?<![\w.])(?:{'|'.join(re.escape(n) for n in names)})\b", tc, out)


def prefix(source: bytes, facts: KernelFacts, stmts: list[Node], k: int, tree: tuple[str, str, str, str],
           tvars: set[str], why: str) -> Prefix | Refused:
    """The statements before the tree (stmts[k]) that compute each thread's value, to be run again per element."""
    array, op, t, extent = tree
    body = source[facts.body_start:facts.body_end].decode("utf-8", "replace")
    if re.search(r"\b(threadIdx|blockDim)\.[yz]\b|\breturn\b", body):
        return Refused("coarsening needs a 1-D block and no return")
    after = source[stmts[k].end_byte:facts.body_end].decode("utf-8", "replace")
    names = tvars | {"threadIdx.x"}
    rest = re.sub(rf"\b(?:{'|'.join(re.escape(n) for n in names)})\s*==\s*0\b", "", after)
    if any(re.search(rf"(?<![\w.]){re.escape(n)}\b", rest) for n in names) or "blockDim" in rest:
        return Refused("after the tree the thread index may only be compared with 0 (the block has fewer threads)")
    moved: list[Node] = []
    store: Node | None = None
    for s in stmts[:k - 1]:
        code = text(source, s)
        kept = s.type == "declaration" and ("__shared__" in code or _alias_only(source, s, tvars))
        if kept and not moved and store is None:
            continue
        if store is not None:
            return Refused(f"the store into {array}[{t}] must be the last statement before the tree's barrier")
        if s.type == "declaration" and not kept and not _EFFECT.search(re.sub(r"^[^=]*=", "", code, count=1)):
            declared = [text(source, d.child_by_field_name("declarator")) for d in s.children_by_field_name("declarator")
                        if d.type == "init_declarator"]
            if len(declared) != len(s.children_by_field_name("declarator")) or any(re.search(rf"\b{n}\b", after) for n in declared):
                return Refused("a value computed before the tree is used after it (or declared without a value)")
            moved.append(s)
            continue
        m = re.fullmatch(rf"{re.escape(array)}\s*\[\s*(\w+(?:\.x)?)\s*\]\s*=\s*(.+);", code.strip(), re.S)
        if s.type != "expression_statement" or m is None or m.group(1) not in names or _EFFECT.search(m.group(2)):
            return Refused(f"before the tree only declarations and one `{array}[{t}] = value;` may compute ({why})")
        store = s
    if store is None:
        return Refused(f"no `{array}[{t}] = value;` before the tree")
    if any(re.search(rf"\b{re.escape(array)}\b", text(source, s)) for s in moved) or \
            re.search(rf"\b{re.escape(array)}\b", text(source, store).split("=", 1)[1]):
        return Refused(f"the values stored into {array} must not read {array}")
    value = re.fullmatch(r"[^=]*=\s*(.+);", text(source, store).strip(), re.S)
    assert value is not None
    base = next((v for v in tvars if v != "threadIdx.x"), "threadIdx.x")
    return Prefix((moved[0] if moved else store).start_byte, moved, value.group(1), names, base)


def _alias_only(source: bytes, decl: Node, tvars: set[str]) -> bool:
    """`int t = threadIdx.x;`: the thread index under another name (kept: it names the new thread)."""
    ds = decl.children_by_field_name("declarator")
    return bool(ds) and all(d.type == "init_declarator" and text(source, d.child_by_field_name("declarator")) in tvars for d in ds)
