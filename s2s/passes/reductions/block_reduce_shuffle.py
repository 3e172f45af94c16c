"""block-reduce-shuffle: a block's shared-memory tree reduction becomes warp shuffles and one short second stage.

Shape: after `__syncthreads();` a top-level loop halves (`for (s = B / 2; s > 0; s >>= 1) { if (t < s) S[t] += S[t + s];
__syncthreads(); }`) or doubles (`for (s = 1; s < B; s *= 2) { if (t % (2 * s) == 0) ...; __syncthreads(); }`) over the
shared array S, with `+`, `fmaxf`/`fminf`/`max`/`min`, t being threadIdx.x. Both leave the reduction of S[0..B-1] in
S[0]. Each warp reduces its 32 values with `__shfl_down_sync`, lane 0 stores the warp's value, and the first warp reduces
those B / 32 values the same way into S[0]; what follows the loop is unchanged. B must be a power of two from 32 to
1024, a compile-time constant (a `static_assert` checks it); threads past B take no part, as in the tree. Sums are added in
another order (within the MEP's tolerance); maxima and minima are exact. warps=W: one warp reduces each block's
elements, W warps a block, no shared memory (passes/reductions/_warp_segment.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import body_node, fresh, indent_of, statements, text
from ._coarse_tree import coarse_prefix
from ._warp_segment import warp_segments

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
#define BLOCK 256
__global__ void block_sums(const float* x, float* partial, int n)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    buf[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0)
        partial[blockIdx.x] = buf[0];
}
"""
EXAMPLE_AFTER = """\
#define BLOCK 256
__global__ void block_sums(const float* x, float* partial, int n)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    buf[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    {
        static_assert((BLOCK) >= 32 && (BLOCK) <= 1024 && ((BLOCK) & ((BLOCK) - 1)) == 0, "block-reduce-shuffle: B");
        __shared__ float buf_w[32];
        float v = buf[t < (BLOCK) ? t : 0];
        for (int off = 16; off > 0; off >>= 1)
            v = v + __shfl_down_sync(0xffffffffu, v, off);
        if (t % 32 == 0) buf_w[t / 32] = v;
        __syncthreads();
        if (t < 32) {
            v = buf_w[t % ((BLOCK) / 32)];
            for (int off = (BLOCK) / 64; off > 0; off >>= 1)
                v = v + __shfl_down_sync(0xffffffffu, v, off);
            if (t == 0) buf[0] = v;
        }
        __syncthreads();
    }
    if (t == 0)
        partial[blockIdx.x] = buf[0];
}
"""
_FUNCS = {"fmaxf", "fminf", "fmax", "fmin", "max", "min"}


@dataclass(frozen=True)
class BlockReduceShuffle:
    name: ClassVar[str] = "block-reduce-shuffle"
    WHY_IT_EXISTS: ClassVar[str] = "the textbook shared-memory tree reduction of a block, as warp shuffles"
    priority: ClassVar[int] = 45  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("block-reduce-shuffle{warps=8}", "block-reduce-shuffle", "block-reduce-shuffle{coarsen=4}")
    coarsen: int = 1  # F > 1: B / F threads per block, each combining F values in registers (passes/reductions/_coarse_tree.py)
    warps: int = 0  # W > 0: one warp per block's elements, W of them a block, no shared memory (passes/reductions/_warp_segment.py)

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.dialect == "opencl":
            return "warp shuffles have no portable OpenCL 1.2 equivalent"
        if self.coarsen not in {1, 2, 4, 8} or self.warps not in {0, 1, 2, 4, 8, 16, 32} or self.warps and self.coarsen > 1:
            return "coarsen must be 1, 2, 4 or 8, warps 0, 1, 2, 4, 8, 16 or 32, not both"
        if not facts.shared:
            return "no shared-memory array to reduce"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        stmts = statements(body_node(source, facts))
        tvars = {"threadIdx.x"} | {v for s in stmts if s.type == "declaration" for v in _aliases(source, s)}
        why = "needs a top-level loop whose body is `if (<t < s or t % (2 * s) == 0>) S[t] = S[t] op S[t + s]; __syncthreads();`"
        for k, s in enumerate(stmts):
            if s.type != "for_statement" or k == 0 or text(source, stmts[k - 1]) != "__syncthreads();":
                continue
            tree = _tree(source, s, tvars)
            if isinstance(tree, str):
                why = tree
                continue
            array, op, t, extent = tree
            if re.search(r"\b(blockDim|gridDim|threadIdx|blockIdx)\b", extent):
                return Refused(f"the tree's extent {extent} must be a compile-time constant (the shuffles need a power of two "
                               "from 32 to 1024, checked by a static_assert)")
            if re.search(r"\breturn\b", source[facts.body_start : s.start_byte].decode("utf-8", "replace")):
                return Refused("a return before the tree: every thread of the block must reach the shuffles")
            after = source[s.end_byte : facts.body_end].decode("utf-8", "replace")
            if any(i.strip() != "0" for i in re.findall(rf"\b{array}\s*\[([^\]]*)\]", after)) or \
                    re.search(rf"\b{array}\b(?!\s*\[)", after):
                return Refused(f"after the tree only {array}[0] may be read (the tree's other partial values are not kept)")
            elem = _element_type(source, stmts[:k], array)
            if elem is None:
                return Refused(f"{array} must be a one-dimensional __shared__ array declared in the kernel")
            if self.warps:
                return warp_segments(source, facts, stmts, k, (array, op, t, extent), tvars, elem, self.warps)
            if self.coarsen > 1:
                c = coarse_prefix(source, facts, stmts, k, (array, op, t, extent), tvars, elem, self.coarsen)
                if isinstance(c, Refused):
                    return c
                pad = "\n" + indent_of(source, c[0])
                code = pad.join(c[1]) + pad + self._code(source, facts, s, array, op, t, f"({extent}) / {self.coarsen}", elem, c[2])
                return Rewrite((Edit(c[0], s.end_byte, code),), LaunchChange((c[3], 1, 1), "same"),
                               f"{c[3]} threads per block, {self.coarsen} values each, then warp shuffles over {array}[0..{extent})")
            return Rewrite((Edit(s.start_byte, s.end_byte, self._code(source, facts, s, array, op, t, extent, elem)),), None,
                           f"warp shuffles instead of the shared-memory tree over {array}[0..{extent})")
        return Refused(why)

    def _code(self, source: bytes, facts: KernelFacts, loop: Node, array: str, op: str, t: str, b: str, elem: str,
              start: str = "") -> str:
        v, off, w = fresh(facts, source, "v"), fresh(facts, source, "off"), fresh(facts, source, f"{array}_w")

        def combine(a: str, c: str) -> str:
            return f"{a} + {c}" if op == "+" else f"{op}({a}, {c})"

        shfl = f"__shfl_down_sync(0xffffffffu, {v}, {off})"
        lines = ["{",
                 f"    static_assert(({b}) >= 32 && ({b}) <= 1024 && (({b}) & (({b}) - 1)) == 0, \"block-reduce-shuffle: B\");",
                 f"    __shared__ {elem} {w}[32];",
                 f"    {elem} {v} = {start or f'{array}[{t} < ({b}) ? {t} : 0]'};",
                 f"    for (int {off} = 16; {off} > 0; {off} >>= 1)",
                 f"        {v} = {combine(v, shfl)};",
                 f"    if ({t} % 32 == 0) {w}[{t} / 32] = {v};",
                 "    __syncthreads();",
                 f"    if ({t} < 32) {{",
                 f"        {v} = {w}[{t} % (({b}) / 32)];",
                 f"        for (int {off} = ({b}) / 64; {off} > 0; {off} >>= 1)",
                 f"            {v} = {combine(v, shfl)};",
                 f"        if ({t} == 0) {array}[0] = {v};",
                 "    }",
                 "    __syncthreads();",
                 "}"]
        return ("\n" + indent_of(source, loop.start_byte)).join(lines)


def _aliases(source: bytes, decl: Node) -> list[str]:
    """Locals declared as exactly threadIdx.x (`int t = threadIdx.x;`)."""
    out = []
    for d in decl.children_by_field_name("declarator"):
        value = d.child_by_field_name("value") if d.type == "init_declarator" else None
        if value is not None and text(source, value).replace(" ", "") == "threadIdx.x":
            out.append(text(source, d.child_by_field_name("declarator")))
    return out


def _tree(source: bytes, loop: Node, tvars: set[str]) -> tuple[str, str, str, str] | str:
    """(array, op, thread index, extent B) of a tree-reduction loop, or why it is not one."""
    init, cond, step, body = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update", "body"))
    items = statements(body) if body is not None and body.type == "compound_statement" else []
    if init is None or cond is None or step is None or len(items) != 2 or text(source, items[1]) != "__syncthreads();" \
            or items[0].type != "if_statement" or items[0].child_by_field_name("alternative") is not None:
        return "needs a loop whose body is one `if (...) S[t] = ...;` and `__syncthreads();`"
    head = re.fullmatch(r"(?:(?:unsigned\s+)?int|unsigned)\s+(\w+)\s*=\s*(.+?);?", text(source, init).strip())
    if head is None:
        return "the tree loop must declare its stride: for (int s = ...; ...)"
    s, start, c, upd = head.group(1), head.group(2).strip(), text(source, cond).strip(), text(source, step).replace(" ", "")
    half = upd in {f"{s}>>=1", f"{s}/=2"} and re.fullmatch(rf"{s}\s*>\s*0", c)
    double = upd in {f"{s}<<=1", f"{s}*=2"} and start == "1" and re.fullmatch(rf"{s}\s*<\s*(.+)", c)
    extent = re.fullmatch(r"\(?(.+?)\)?\s*(?:/\s*2|>>\s*1)", start) if half else double if double else None
    if extent is None:
        return "the stride must halve from B / 2 to 1 or double from 1 below B"
    b = extent.group(1).strip()
    guard = text(source, items[0].child_by_field_name("condition")).strip()[1:-1].replace(" ", "")
    t = next((v for v in tvars if guard in ({f"{v}<{s}"} if half else {f"{v}%(2*{s})==0", f"({v}%(2*{s}))==0"})), None)
    if t is None:
        return "the tree's test must be `t < s` (halving) or `t % (2 * s) == 0` (doubling), t = threadIdx.x"
    found = _update(source, items[0].child_by_field_name("consequence"), t, s)
    return (found[0], found[1], t, b) if isinstance(found, tuple) else found


def _update(source: bytes, node: Node | None, t: str, s: str) -> tuple[str, str] | str:
    """(array, op) of `S[t] += S[t + s];`, `S[t] = S[t] + S[t + s];` or `S[t] = f(S[t], S[t + s]);` (f a max or min)."""
    while node is not None and node.type == "compound_statement" and len(statements(node)) == 1:
        node = statements(node)[0]
    flat = text(source, node).replace(" ", "").replace("\n", "") if node is not None else ""
    m = re.fullmatch(rf"(\w+)\[{re.escape(t)}\](\+=|=)(.+);", flat)
    if m is None:
        return "the tree's step must update S[t] from S[t] and S[t + s]"
    a, mine, other = m.group(1), f"{m.group(1)}[{t}]", f"{m.group(1)}[{t}+{s}]"
    rhs = m.group(3)
    if m.group(2) == "+=" and rhs == other or rhs in {f"{mine}+{other}", f"{other}+{mine}"}:
        return a, "+"
    f = re.fullmatch(r"(\w+)\((.+),(.+)\)", rhs)
    if m.group(2) == "=" and f is not None and f.group(1) in _FUNCS and {f.group(2), f.group(3)} == {mine, other}:
        return a, f.group(1)
    return "the tree's step must be a sum, a maximum or a minimum of S[t] and S[t + s]"


def _element_type(source: bytes, before: list[Node], array: str) -> str | None:
    for s in before:
        m = re.fullmatch(rf"__shared__\s+(?:volatile\s+)?([\w ]+?)\s+{array}\s*\[[^\]\[]+\]\s*;", text(source, s).strip())
        if m is not None:
            return m.group(1)
    return None
