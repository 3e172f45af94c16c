"""stencil-tiling: a 2-D stencil reads its block's tile plus halo from shared memory (OpenCL: __local), staged once.

From the kernel model (s2s.lang.stencil): every read-only array whose reads sit at constant offsets around the
thread's point (or at offsets of short window loops, `for (dy = -1; dy <= 1; dy++)`) is a stencil. At the top of the
kernel, before any early return, the block loads its tile plus the halo that the footprint needs, cooperatively,
each point only where the original reads it (the union of the reads' guard boxes shifted by the footprint: sizes that
do not divide the block and the domain's edges are exact), then synchronizes; the reads become tile reads. Refused:
offsets that move with a loop or another index, arrays the kernel also writes (in place), kernels that already use
shared memory or barriers, footprints of one point, 3-D grids (stencil-streaming).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import kernel_model
from s2s.lang.stencil import Stencil, analyse

from ..common.tree import body_node, fresh, indent_of, statements
from ._stencil import space, sync, tile_load, tile_read, tile_shape

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void jacobi(const float* in, float* out, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && x < nx - 1 && y > 0 && y < ny - 1)
        out[y * nx + x] = 0.2f * (in[y * nx + x] + in[y * nx + x - 1] + in[y * nx + x + 1] + in[(y - 1) * nx + x] +
                                  in[(y + 1) * nx + x]);
}
"""
EXAMPLE_AFTER = """\
__global__ void jacobi(const float* in, float* out, int nx, int ny)
{
    __shared__ float in_tile[10][34];
    for (int ly = threadIdx.y; ly < 10; ly += 8)
        for (int lx = threadIdx.x; lx < 34; lx += 32) {
            int gy = (int)blockIdx.y * 8 + ly - 1;
            int gx = (int)blockIdx.x * 32 + lx - 1;
            in_tile[ly][lx] = (1 < ny - 1 && 1 < nx - 1 && ((gy >= 0 && gy < ny && gx >= 1 && gx < nx - 1) || (gy >= 1 && gy < ny - 1 && gx >= 0 && gx < nx))) ? in[nx * gy + gx] : (float)0;
        }
    __syncthreads();
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && x < nx - 1 && y > 0 && y < ny - 1)
        out[y * nx + x] = 0.2f * (in_tile[threadIdx.y + 1][threadIdx.x + 1] + in_tile[threadIdx.y + 1][threadIdx.x] + in_tile[threadIdx.y + 1][threadIdx.x + 2] + in_tile[threadIdx.y][threadIdx.x + 1] +
                                  in_tile[threadIdx.y + 2][threadIdx.x + 1]);
}
"""
SMEM_LIMIT = 48 * 1024


@dataclass(frozen=True)
class StencilTiling:
    name: ClassVar[str] = "stencil-tiling"
    WHY_IT_EXISTS: ClassVar[str] = "2-D stencils whose threads read overlapping neighbourhoods: a shared tile with halo"
    priority: ClassVar[int] = 13  # structural, after delinearize-2d (11) opens the second axis it needs
    space: ClassVar[tuple[str, ...]] = ("stencil-tiling", "stencil-tiling{block=32x16}")
    block: tuple[int, ...] = (32, 8)

    def applies(self, facts: KernelFacts) -> bool | str:
        if len(self.block) != 2 or self.block[0] % 16 or not 32 <= self.block[0] * self.block[1] <= 1024:
            return "block must be two sizes, x a multiple of 16, with 32 to 1024 threads"
        if facts.shared:
            return "kernel already uses shared memory"
        if facts.atomics:
            return "kernel uses atomics"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        st = stencil(source, facts)
        if isinstance(st, str):
            return Refused(st)
        if "z" in st.vars:
            return Refused("a 3-D grid: stencil-streaming marches along z")
        block = (self.block[0], self.block[1])
        elem = {a.name: (facts.param(a.name).base_type if facts.param(a.name) else "float") for a in st.arrays}  # type: ignore[union-attr]
        size = sum(tile_shape(a, block)[0] * tile_shape(a, block)[1] * (8 if "double" in elem[a.name] else 4) for a in st.arrays)
        if size > SMEM_LIMIT:
            return Refused(f"the tiles need {size} bytes of shared memory, over 48 KiB")
        stmts = statements(body_node(source, facts))
        pad = indent_of(source, stmts[0].start_byte)
        names = {w: fresh(facts, source, w) for w in ("ly", "lx", "gy", "gx")}
        lines, edits = [], []
        for a in st.arrays:
            tile = fresh(facts, source, f"{a.name}_tile")
            rows, cols = tile_shape(a, block)
            lines.append(f"{pad}{space(facts.dialect)} {elem[a.name]} {tile}[{rows}][{cols}];")
            lines += tile_load(a, st, facts.dialect, {**names, "tile": tile}, block, elem[a.name], pad)
            edits += [Edit(r.start, r.end, tile_read(a, tile, r.offset, facts.dialect)) for r in a.reads]
        lines.append(pad + sync(facts.dialect))
        edits.append(Edit(stmts[0].start_byte, stmts[0].start_byte, "\n".join(lines).lstrip() + "\n" + pad))
        what = ", ".join(f"{a.name} ({len(a.points())} points)" for a in st.arrays)
        return Rewrite(tuple(edits), LaunchChange((block[0], block[1], 1), "same-coverage"), f"{block[0]}x{block[1]} tiles of {what}")


def stencil(source: bytes, facts: KernelFacts, stream: str = "") -> Stencil | str:
    """The kernel's stencil arrays, or why there are none."""
    if facts.shared or any(b in source[facts.body_start:facts.body_end] for b in (b"__syncthreads", b"barrier(")):
        return "kernel already uses shared memory or barriers"
    model = kernel_model(source, facts.dialect, facts.name)
    if model is None:
        return "no kernel model"
    st = analyse(source, facts.dialect, model, (facts.body_start, facts.body_end), stream)
    if isinstance(st, str):
        return st
    if not st.arrays:
        return "no stencil input: " + ("; ".join(st.skipped) if st.skipped else "no read-only array")
    return st
