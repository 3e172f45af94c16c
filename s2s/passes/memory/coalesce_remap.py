"""coalesce-remap: swap the x and y thread mappings when threadIdx.x walks the slow (strided) index.

From the kernel model: every affine access (through index macros too) is weighed by its loop depth, and counted as
coalesced or uniform across a warp along threadIdx.x now, and along threadIdx.y (what x would walk after the swap).
When the swap coalesces more, the x/y builtins in the mapping declarations are exchanged, and the launch swaps its
x and y extents.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.affine import Poly
from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import THREAD_BUILTIN, KernelFacts, idents
from s2s.lang.kernel_model import kernel_model

from ..common.tree import body_node, statements, text

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
    WHY_IT_EXISTS: ClassVar[str] = "2-D kernels whose threadIdx.x walks the strided index: no access coalesces"
    priority: ClassVar[int] = 110  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("coalesce-remap",)

    def applies(self, facts: KernelFacts) -> bool | str:
        vx, vy = facts.var_for("x"), facts.var_for("y")
        if facts.dims != 2 or not vx or not vy or facts.var_for("z"):
            return "needs a 2-D thread mapping"
        if facts.shared:
            return "shared memory laid out for the current mapping"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        model = kernel_model(source, facts.dialect, facts.name)
        now = swapped = 0
        for a in model.accesses if model is not None else ():
            if a.affine and None not in a.threads and a.depends_on("threadIdx.x") | a.depends_on("threadIdx.y"):
                weight = 8 ** len(a.loops)  # an access in a loop nest runs that much more often
                now += weight * _unit_or_none(a.threads, "threadIdx.x")
                swapped += weight * _unit_or_none(a.threads, "threadIdx.y")
        if swapped <= now:
            return Refused(f"threadIdx.x ({facts.var_for('x')}) does not walk the slow index: swapping x and y coalesces "
                           f"no more accesses ({swapped} against {now}, weighted by loop depth)")
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


def _unit_or_none(index: tuple[Poly | None, ...], lane: str) -> int:
    """1 when neighbouring lanes along `lane` read neighbouring or the same elements, else 0."""
    *outer, last = index
    if any(p is not None and p.coeff(lane).terms for p in outer) or last is None:
        return 0
    return int(last.coeff(lane).constant() in {0, 1, -1})
