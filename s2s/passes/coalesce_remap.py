"""coalesce-remap: swap the x and y thread mappings when threadIdx.x walks the slow (strided) index.

Shape: a 2-D kernel where every two-variable subscript multiplies the x-mapped variable by a stride and
uses the y-mapped one unscaled (`A[row * n + col]` with row from x). The x/y builtins in the mapping
declarations are exchanged, and the launch swaps its x and y extents.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import THREAD_BUILTIN, KernelFacts, idents

from ._common import body_node, statements, text

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void scale2d(float* A, float a, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < n && col < n) A[row * n + col] *= a;
}
"""
EXAMPLE_AFTER = """\
__global__ void scale2d(float* A, float a, int n)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) A[row * n + col] *= a;
}
"""
_SWAP = {"x": "y", "y": "x", "0": "1", "1": "0"}


@dataclass(frozen=True)
class CoalesceRemap:
    name: ClassVar[str] = "coalesce-remap"
    priority: ClassVar[int] = 110  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("coalesce-remap",)

    def applies(self, facts: KernelFacts) -> bool | str:
        vx, vy = facts.var_for("x"), facts.var_for("y")
        if facts.dims != 2 or not vx or not vy or facts.var_for("z"):
            return "needs a 2-D thread mapping"
        pairs = [s.index for s in facts.subscripts if {vx, vy} <= idents(s.index)]
        if not pairs:
            return "no subscript uses both mapped variables"
        if not all(_scaled(i, vx) and not _scaled(i, vy) for i in pairs):
            return f"threadIdx.x ({vx}) does not walk the slow index in every subscript"
        if facts.shared:
            return "shared memory laid out for the current mapping"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        names = {facts.var_for("x"), facts.var_for("y")}
        edits: list[Edit] = []
        for s in statements(body_node(source, facts)):
            uses = list(THREAD_BUILTIN.finditer(text(source, s)))
            if not uses:
                continue
            declared = s.type == "declaration" and idents(text(source, s.child_by_field_name("declarator")).split("=")[0]) & names
            if not declared:
                return Refused("thread indices are used outside the two mapping declarations")
            for m in uses:
                group = 2 if m.group(2) else 4
                if m.group(group) in _SWAP:
                    at = s.start_byte + len(text(source, s)[: m.start(group)].encode())
                    edits.append(Edit(at, at + 1, _SWAP[m.group(group)]))
        return Rewrite(tuple(edits), LaunchChange(None, "swap-xy"), "threadIdx.x now walks the contiguous index")


def _scaled(index: str, var: str) -> bool:
    return bool(re.search(rf"\b{re.escape(var)}\s*\*|\*\s*{re.escape(var)}\b", index)) or bool(
        re.search(rf"\bIDX\s*\(\s*{re.escape(var)}\s*,", index))
