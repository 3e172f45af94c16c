"""The tiled pair loop of smem-allpairs' form, as allpairs-bodies and allpairs-lanes find it: the loop, the tile loop
around it, its sums, and the example kernel both passes start from."""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import text, walk

# a potential kernel in smem-allpairs' guarded form: the example both passes start from
EXAMPLE_FORM = """\
__global__ void potential(const float* x, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = !(i >= n);
    if (!(0 < (n))) return;
    if (!live) i = (n) - 1;
    float sum = 0.0f;
    __shared__ float x_s[256];
    for (int t = 0; t < n; t += 256) {
        for (int l = threadIdx.x; l < 256 && l < n - t; l += blockDim.x) x_s[l] = x[t + l];
        __syncthreads();
        for (int j = t; j < n && j - t < 256; ++j) {
            if (j == i) continue;
            sum += 1.0f / fabsf(x[i] - x_s[j - t]);
        }
        __syncthreads();
    }
    if (live) {
        phi[i] = sum;
    }
}
"""
_PAIR = re.compile(r"for\s*\(\s*int\s+(\w+)\s*=\s*(\w+)\s*;[^;]*\b\1\s*-\s*\2\s*<\s*(\d+)\s*;\s*(\+\+\s*\1|\1\s*\+\+)\s*\)")
_ZERO = re.compile(r"0(?:\.0*)?[fF]?|0?\.0+[fF]?")


@dataclass(frozen=True)
class PairLoop:
    loop: Node  # for (int j = t; j < n && j - t < TILE; ++j)
    tile_loop: Node  # the loop over t around it
    scope: Node  # what holds the tile loop: the kernel body, or a block in it (`if (i < n) {`)
    j: str
    t: str
    tile: int


def missing_form(facts: KernelFacts) -> str:
    """Why the kernel's facts rule smem-allpairs' form out ("" where it may hold it: `pair_loop` looks closer)."""
    if facts.dims != 1 or not facts.var_for("x") or not facts.shared:
        return "needs smem-allpairs' form first (a 1-D mapping and a tile in shared memory)"
    return ""


def pair_loop(source: bytes, body: Node) -> PairLoop | str:
    """The kernel's one tiled pair loop, in a tile loop at the top of the kernel body or of a block in it; or why not."""
    pairs = [(n, m) for n in walk(body) if n.type == "for_statement" and (m := _PAIR.match(_head(source, n)))]
    if len(pairs) != 1:
        return "needs one tiled pair loop `for (int j = t; j < n && j - t < TILE; ++j)` (smem-allpairs without unroll, first)"
    pair, m = pairs[0]
    tile_loop = pair.parent.parent if pair.parent is not None else None
    scope = tile_loop.parent if tile_loop is not None else None
    if tile_loop is None or tile_loop.type != "for_statement" or scope is None or \
            not (scope == body or (scope.type == "compound_statement" and scope.parent == body)):
        return "the pair loop must sit in a tile loop at the top of the kernel body"
    return PairLoop(pair, tile_loop, scope, m.group(1), m.group(2), int(m.group(3)))


def is_mapping(source: bytes, stmt: Node, i: str, unsigned: bool = False) -> bool:
    """Whether `stmt` is `int i = blockIdx.x * blockDim.x + threadIdx.x;` (`unsigned`: or an unsigned i)."""
    ty = r"(int|unsigned|unsigned int)" if unsigned else "int"
    return stmt.type == "declaration" and re.fullmatch(
        rf"{ty}\s+{re.escape(i)}\s*=\s*blockIdx\.x\s*\*\s*blockDim\.x\s*\+\s*threadIdx\.x\s*;", text(source, stmt)) is not None


def accumulators(source: bytes, outer: list[Node], pair: Node) -> list[str] | str:
    """The locals `a += e` / `a -= e` of the pair loop declared with 0 before it; why not where it writes anything else."""
    inner = {text(source, d.child_by_field_name("declarator") or d) for n in walk(pair) if n.type == "declaration"
             for d in n.children_by_field_name("declarator")}
    names: list[str] = []
    for n in walk(pair.child_by_field_name("body") or pair):
        if n.type in {"break_statement", "return_statement", "goto_statement"} or \
                (n.type == "call_expression" and "sync" in text(source, n.child_by_field_name("function"))):
            return "the pair loop must leave only by its end or `continue`, without barriers"
        if n.type == "update_expression" or (n.type == "assignment_expression" and text(source, n.child_by_field_name("left")) not in inner):
            left = n.child_by_field_name("left") if n.type == "assignment_expression" else None
            op = text(source, n.child_by_field_name("operator"))
            if left is None or left.type != "identifier" or op not in {"+=", "-="}:
                return "the pair loop may write only its own locals and sums into locals (a += e, a -= e)"
            if text(source, left) not in names:
                names.append(text(source, left))
    zero = {text(source, d.child_by_field_name("declarator")) for n in outer if n.type == "declaration"
            and n.end_byte <= pair.start_byte for d in n.children_by_field_name("declarator")
            if d.type == "init_declarator" and _ZERO.fullmatch(text(source, d.child_by_field_name("value")).strip())}
    if not names:
        return "no sum into a local in the pair loop"
    missing = [a for a in names if a not in zero]
    return f"the sums must start from 0 in a declaration before the loop: {', '.join(missing)}" if missing else names


def _head(source: bytes, loop: Node) -> str:
    b = loop.child_by_field_name("body")
    return source[loop.start_byte : b.start_byte if b is not None else loop.end_byte].decode("utf-8", "replace").strip()
