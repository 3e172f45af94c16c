"""inner-loop-threads: a thread per column that loops over a second, independent index becomes a 2-D launch over both.

`v = blockIdx.x*blockDim.x + threadIdx.x; if (v < M) { for (w = lo; w < M; w++) BODY }` runs M threads, each
walking up to M iterations: a 2048-column kernel keeps 2048 threads busy on a GPU that holds 270,000. When the
kernel model shows the iterations independent across (v, w) (every write lands on an element of its own pair;
`sym[v][w]` and its mirror `sym[w][v]` only over a triangular range, w from v), w becomes the y axis of the launch,
as long as the x axis, and the loop a guard. Triangular or not; then any contraction inside tiles as usual.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.affine import Poly
from s2s.lang.dependence import independent
from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.index_split import int_macros, value_text
from s2s.lang.kernel_facts import KernelFacts, idents

from ..common.thread_loop import thread_loop
from ..common.tree import body_node, indent_of, text, walk

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void gram(const float* data, float* sym, int m, int n)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x;
    if (j1 < m) {
        for (int j2 = j1; j2 < m; j2++) {
            sym[j1 * m + j2] = 0.0f;
            for (int i = 0; i < n; i++)
                sym[j1 * m + j2] += data[i * m + j1] * data[i * m + j2];
            sym[j2 * m + j1] = sym[j1 * m + j2];
        }
    }
}
"""
EXAMPLE_AFTER = """\
__global__ void gram(const float* data, float* sym, int m, int n)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x;
    int j2 = blockIdx.y * blockDim.y + threadIdx.y;
    if (j1 < m && j2 >= j1 && j2 < m) {
        sym[j1 * m + j2] = 0.0f;
        for (int i = 0; i < n; i++)
            sym[j1 * m + j2] += data[i * m + j1] * data[i * m + j2];
        sym[j2 * m + j1] = sym[j1 * m + j2];
    }
}
"""
_BARRIER = re.compile(r"\b(__syncthreads|barrier|atomic\w*|atom_\w+|return|break|continue|goto)\b")


@dataclass(frozen=True)
class InnerLoopThreads:
    name: ClassVar[str] = "inner-loop-threads"
    WHY_IT_EXISTS: ClassVar[str] = "a thread per column looping over an independent index: most of the GPU idle"
    priority: ClassVar[int] = 12  # before the tilings: it opens the second axis they tile
    # the last entry: batched_gemv16's row on x after the swap, in float4 words (92% of the copy bandwidth on the H200)
    space: ClassVar[tuple[str, ...]] = ("inner-loop-threads", "inner-loop-threads{block=16x16}",
                                        "inner-loop-threads{block=16x16},coalesce-remap,vector-loads{width=4}")
    block: tuple[int, ...] = (32, 8)

    def applies(self, facts: KernelFacts) -> bool | str:
        if len(self.block) != 2 or self.block[0] % 16 or not 32 <= self.block[0] * self.block[1] <= 1024:
            return "block must be two sizes, x a multiple of 16, with 32 to 1024 threads"
        if facts.dims != 1 or not facts.var_for("x"):
            return "needs a 1-D thread mapping along x"
        if facts.shared or facts.atomics:
            return "kernel uses shared memory or atomics"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        tl = thread_loop(source, facts, "one for loop")
        if isinstance(tl, Refused):
            return tl
        model, v, offset, upper, inside, end = tl.model, tl.var, tl.offset, tl.upper, tl.inside, tl.end
        loop, lp, init, cond, body, decl, guard = tl.loop, tl.lp, tl.init, tl.cond, tl.body, tl.decl, tl.guard_node
        w = lp.var
        extent = "" if lp.upper == upper[v] else _extent(source, facts, upper[v] - offset, lp.upper - offset if lp.upper is not None else None)
        if extent is None:
            return Refused(f"the loop over {w} must end where the guard bounds {v} ({upper[v]}), or both bounds must be "
                           "scalar parameters or constants (the y axis as long as the loop)")
        triangular = lp.lower == Poly.name(v)
        if extent and triangular:
            return Refused(f"a triangular loop over {w} must end where the guard bounds {v}")
        low = (lp.lower - offset).constant() if lp.lower is not None else None
        if not triangular and (low is None or low < 0):
            return Refused(f"the loop over {w} must start at {v} or at a constant no lower than the threads' first index")
        if _BARRIER.search(text(source, body)):
            return Refused("the loop body has a barrier, an atomic or a jump")
        outer = {text(source, d.child_by_field_name("declarator") or d).split("=")[0].strip() for d in walk(body_node(source, facts))
                 if d.type == "init_declarator" and not body.start_byte <= d.start_byte < body.end_byte}
        carried = {text(source, n.child_by_field_name("left") or n) for n in walk(body) if n.type == "assignment_expression"} & outer
        if carried:
            return Refused(f"{', '.join(sorted(carried))} carries a value from one iteration to the next")
        why = independent(model, body.start_byte, body.end_byte, v, w, triangular)
        if why:
            return Refused(why)
        ty = text(source, init.child_by_field_name("type"))
        first = text(source, init.child_by_field_name("declarator").child_by_field_name("value"))  # type: ignore[union-attr]
        gid = "get_global_id(1)" if facts.dialect == "opencl" else "blockIdx.y * blockDim.y + threadIdx.y"
        pad = indent_of(source, decl.start_byte)
        off = "" if offset.is_zero else f" + {offset.text()}"
        shift = len(indent_of(source, loop.start_byte)) - len(pad)
        inner = text(source, body) if body.type == "compound_statement" else "{\n" + indent_of(source, body.start_byte) + text(source, body) + "\n" + " " * max(shift, 0) + pad + "}"
        inner = re.sub(r"\n" + " " * shift, "\n", inner) if shift > 0 else inner
        edits = (Edit(decl.end_byte, decl.end_byte, f"\n{pad}{ty} {w} = {gid}{off};"),
                 Edit(guard.start_byte, end, f"if ({inside} && {w} >= {first} && {text(source, cond)}) {inner}"))
        launch = LaunchChange((self.block[0], self.block[1], 1), extent or "square-xy")
        return Rewrite(edits, launch, f"{w} from the y axis ({'triangular' if triangular else 'rectangular'} range), {v} from x")


def _extent(source: bytes, facts: KernelFacts, xs: Poly, ys: Poly | None) -> str | None:
    """The `extent:X|Y` launch rule for x threads `xs` and y threads `ys` (macros replaced by their values), None unless
    both use only scalar parameters and constants."""
    if ys is None:
        return None
    macros = int_macros(source)
    x, y = value_text(xs, macros), value_text(ys, macros)
    scalars = {p.name for p in facts.params if not p.pointer}
    return f"extent:{x}|{y}" if idents(x + " " + y) <= scalars else None
