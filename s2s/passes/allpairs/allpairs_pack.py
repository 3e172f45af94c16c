"""allpairs-pack: smem-allpairs' float tiles of one tile loop packed into one float2/float4 tile, so that a pair reads
its j-th elements with one wide shared load instead of one load a tile.

nbody_soa's tiled form read x, y, z and m from four shared arrays: four LDS.32 a pair, and shared loads were its limit
(ncu: "memory-limited", 79% of the shared pipe). On smem-allpairs' form (a tile loop whose element loads are
`for (int l = tid; l < TILE && l < n - t; l += nthr) A_s[l] = A[t + l];`, one such loop a `__shared__ float A_s[TILE];`)
two float tiles become one float2 tile, three or four one float4 tile (.x, .y, .z, .w in the order of the loads; a
fourth lane of three is 0.0f), filled by the first load loop (`make_float4(x[t + l], ...)`), the others removed, and
every read `A_s[e]` becomes `P_s[e].x`. The same values are read: results are bit for bit the same. Refused with
fewer than two float tiles, and where loop-unroll's pragmas already stand in the tile loop.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import body_node, fresh, text, walk

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void potential(const float* x, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    __shared__ float x_s[256];
    __shared__ float m_s[256];
    for (int t = 0; t < n; t += 256) {
        for (int l = threadIdx.x; l < 256 && l < n - t; l += blockDim.x) x_s[l] = x[t + l];
        for (int l = threadIdx.x; l < 256 && l < n - t; l += blockDim.x) m_s[l] = m[t + l];
        __syncthreads();
        for (int j = t; j < n && j - t < 256; ++j)
            sum += m_s[j - t] / fabsf(x[i] - x_s[j - t]);
        __syncthreads();
    }
    phi[i] = sum;
}
"""
EXAMPLE_AFTER = """\
__global__ void potential(const float* x, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    __shared__ float2 xm_s[256];
    for (int t = 0; t < n; t += 256) {
        for (int l = threadIdx.x; l < 256 && l < n - t; l += blockDim.x) xm_s[l] = make_float2(x[t + l], m[t + l]);
        __syncthreads();
        for (int j = t; j < n && j - t < 256; ++j)
            sum += xm_s[j - t].y / fabsf(x[i] - xm_s[j - t].x);
        __syncthreads();
    }
    phi[i] = sum;
}
"""
_LOAD = re.compile(r"(\w+)\s*\[\s*(\w+)\s*\]\s*=\s*(\w+)\s*\[\s*(\w+)\s*\+\s*\2\s*\]\s*;")


@dataclass(frozen=True)
class AllpairsPack:
    name: ClassVar[str] = "allpairs-pack"
    WHY_IT_EXISTS: ClassVar[str] = "n-body loops reading several float tiles a pair from shared memory (the zoo's nbody_soa)"
    priority: ClassVar[int] = 84  # after smem-allpairs (80), whose form it needs, and allpairs-bodies (83)
    space: ClassVar[tuple[str, ...]] = ("allpairs-pack",)

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.dialect == "opencl":
            return "CUDA/HIP only (smem-allpairs' form)"
        if not facts.shared:
            return "needs smem-allpairs' form first (tiles in shared memory)"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        body = body_node(source, facts)
        loops = [n for n in walk(body) if n.type == "for_statement" and _LOAD.fullmatch(text(source, n.child_by_field_name("body")).strip())]
        groups: dict[int, list[Node]] = {}
        for n in loops:
            groups.setdefault(n.parent.id if n.parent is not None else 0, []).append(n)
        if len(groups) != 1:
            return Refused("needs one tile loop with smem-allpairs' element loads `A_s[l] = A[t + l];`")
        loads = next(iter(groups.values()))
        head = {_head(source, n) for n in loads}
        decls = {d_name: d for d in walk(body) if d.type == "declaration"
                 for m in [re.fullmatch(r"__shared__\s+float\s+(\w+)\s*\[\s*(\d+)\s*\]\s*;", text(source, d))] if m
                 for d_name in [m.group(1)]}
        tiles = [(n, m) for n in loads for m in [_LOAD.fullmatch(text(source, n.child_by_field_name("body")).strip())]
                 if m is not None and m.group(1) in decls and (p := facts.param(m.group(3))) is not None and p.base_type == "float"]
        tiles = tiles[:4]
        if len(tiles) < 2 or len(head) != 1:
            return Refused("needs at least two float tiles loaded by the same loop header (smem-allpairs' form)")
        outer = loads[0].parent
        if outer is None or re.search(r"^\s*#", text(source, outer), re.M):
            return Refused("the tile loop holds preprocessor lines (loop-unroll goes after allpairs-pack)")
        sizes = {re.search(r"\[\s*(\d+)\s*\]", text(source, decls[m.group(1)])).group(1) for _, m in tiles}  # type: ignore[union-attr]
        if len(sizes) != 1:
            return Refused("the tiles differ in size")
        vec = "float2" if len(tiles) == 2 else "float4"
        packed = fresh(facts, source, "".join(m.group(3) for _, m in tiles) + "_s")
        lanes = "xyzw"
        args = [f"{m.group(3)}[{m.group(4)} + {m.group(2)}]" for _, m in tiles] + (["0.0f"] if len(tiles) == 3 else [])
        first, fm = tiles[0]
        edits = [Edit(decls[fm.group(1)].start_byte, decls[fm.group(1)].end_byte, f"__shared__ {vec} {packed}[{sizes.pop()}];")]
        lb = first.child_by_field_name("body")
        assert lb is not None
        edits.append(Edit(lb.start_byte, lb.end_byte, f"{packed}[{fm.group(2)}] = make_{vec}({', '.join(args)});"))
        for n, m in tiles[1:]:
            edits += [_drop(source, decls[m.group(1)]), _drop(source, n)]
        for k, (_, m) in enumerate(tiles):
            for ref in re.finditer(rf"(?<![\w.])(?<!->){m.group(1)}\s*\[", source[facts.body_start : facts.body_end].decode("utf-8", "replace")):
                at = facts.body_start + ref.start()
                if any(e.start <= at < e.end for e in edits):
                    continue
                close = _close(source, at + ref.end() - ref.start() - 1)
                if close is None:
                    return Refused(f"an unbalanced subscript of {m.group(1)}")
                index = source[at + ref.end() - ref.start() : close].decode("utf-8", "replace")
                edits.append(Edit(at, close + 1, f"{packed}[{index}].{lanes[k]}"))
        return Rewrite(tuple(edits), None, f"tiles {', '.join(m.group(1) for _, m in tiles)} packed in one {vec} tile {packed}")


def _head(source: bytes, loop: Node) -> str:
    b = loop.child_by_field_name("body")
    return re.sub(r"\s+", " ", source[loop.start_byte : b.start_byte if b is not None else loop.end_byte].decode("utf-8", "replace")).strip()


def _drop(source: bytes, node: Node) -> Edit:
    """Remove a statement with its line (its indentation and the newline before it)."""
    start = source.rfind(b"\n", 0, node.start_byte)
    return Edit(start if start >= 0 and not source[start + 1 : node.start_byte].strip() else node.start_byte, node.end_byte, "")


def _close(source: bytes, open_at: int) -> int | None:
    depth = 0
    for k in range(open_at, len(source)):
        depth += {ord("["): 1, ord("]"): -1}.get(source[k], 0)
        if depth == 0:
            return k
    return None
