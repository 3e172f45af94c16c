"""contraction-triangle: contraction-blocking's tiles launched only on one side of the diagonal (128 or 64 a side).

Two shapes halve a blocked contraction's work. A **triangular output** (the guard bounds the column by the row: `j <=
i`, `j > i` as an exit, `j2 >= j1` after inner-loop-threads): only the tiles meeting the triangle get a block, the
per-element guard stays. A **symmetric product over a square guard** (one array on both sides with the row and column
exchanged, `a[i*m+k] * a[j*m+k]`; the term their product; nothing the kernel writes read but the output element, its
`beta*C`): the tiles below the diagonal compute S = A A^T once and write both places, each with its own statements
before and after the loop; the diagonal tiles once. Blocks are numbered in launch order and mapped onto the triangle
(the blocks past it leave at once). The triangular form keeps the sums bit for bit; the symmetric one sums from zero
and adds the sum after the statements before the loop. `tile=64`: 64 threads, 8 x 8 outputs each, 4x the blocks.
`kgroups=2` (or 4; tile 64): as many groups of 64 threads along z splitting the k slices, summed at the end
(passes/contractions/_blocking_body.py; a reordered sum): a triangle of 64-wide tiles alone fills an SM with 8 warps."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from s2s.lang.contraction import find_contraction
from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import model_and_body

from ._symmetry import fresh_names, symmetric, triangle
from ._triangle_code import TriangleCode, bounds, group_refusal
from .contraction_blocking import ContractionBlocking

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void syrk(int n, int m, float alpha, float beta, const float* a, float* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) {
        c[i * n + j] *= beta;
        for (int k = 0; k < m; k++)
            c[i * n + j] += alpha * a[i * m + k] * a[j * m + k];
    }
}
"""
EXAMPLE_AFTER = """\
__global__ void __launch_bounds__(256, 2) syrk(int n, int m, float alpha, float beta, const float* a, float* c)
{
    __shared__ float4 As[8][33];
    __shared__ float4 Bs[8][33];
    __shared__ int alive;
    float acc[64];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const int nmin = gridDim.x, nmaj = gridDim.y, lin = blockIdx.y * gridDim.x + blockIdx.x, tri = nmin * (nmin + 1) / 2;
    int bmaj, bmin;
    if (lin < tri) {
        bmaj = (int)((sqrtf(8.0f * lin + 1.0f) - 1.0f) * 0.5f);
        while (bmaj > 0 && bmaj * (bmaj + 1) / 2 > lin) --bmaj;
        while ((bmaj + 1) * (bmaj + 2) / 2 <= lin) ++bmaj;
        bmin = lin - bmaj * (bmaj + 1) / 2;
    } else {
        bmaj = nmin + (lin - tri) / nmin;
        bmin = (lin - tri) % nmin;
    }
    if (bmaj >= nmaj) return;  // past the last tile of the triangle: the whole block, before any barrier
    const int row0 = bmaj * 128, col0 = bmin * 128;
    int live = 0;
    #pragma unroll
    for (int m1 = 0; m1 < 64; ++m1) {
        int i = row0 + ty * 4 + m1 / 8 % 4 + m1 / 32 * 64;
        int j = col0 + tx * 4 + m1 % 4 + m1 % 8 / 4 * 64;
        acc[m1] = 0;
        if (i < n && j < n) {
            live = 1;
        }
    }
    if (tid == 0) alive = 0;
    __syncthreads();
    if (live) alive = 1;
    __syncthreads();
    if (!alive) return;
    int va0 = 1;
    { int i = row0; int k = 0; va0 = va0 && ((size_t)(const void*)&(a[i * m + k]) % 16 == 0); }
    { int i = row0 + 1; int k = 0; va0 = va0 && ((size_t)(const void*)&(a[i * m + k]) % 16 == 0); }
    { int i = row0; int k = 0; const size_t p0 = (size_t)(const void*)&(a[i * m + k]); { int i = row0; int k = (0) + 1; va0 = va0 && ((size_t)(const void*)&(a[i * m + k]) == p0 + 4); } }
    int vb0 = 1;
    { int j = col0; int k = 0; vb0 = vb0 && ((size_t)(const void*)&(a[j * m + k]) % 16 == 0); }
    { int j = col0 + 1; int k = 0; vb0 = vb0 && ((size_t)(const void*)&(a[j * m + k]) % 16 == 0); }
    { int j = col0; int k = 0; const size_t p0 = (size_t)(const void*)&(a[j * m + k]); { int j = col0; int k = (0) + 1; vb0 = vb0 && ((size_t)(const void*)&(a[j * m + k]) == p0 + 4); } }
    for (int t = 0; t < m; t += 8) {
        #pragma unroll
        for (int e = 0; e < 1; ++e) {
            const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
            { int i = row0 + pa; int k = t + pb;
            if (va0 && i < n && k + 3 < m) {
                const float4 v = *(const float4*)&(a[i * m + k]);
                ((float*)As[pb + 0])[pa] = v.x;
                ((float*)As[pb + 1])[pa] = v.y;
                ((float*)As[pb + 2])[pa] = v.z;
                ((float*)As[pb + 3])[pa] = v.w;
            } else {
                { int i = row0 + pa; int k = t + pb + 0; ((float*)As[pb + 0])[pa] = (i < n && k < m) ? a[i * m + k] : 0.0f; }
                { int i = row0 + pa; int k = t + pb + 1; ((float*)As[pb + 1])[pa] = (i < n && k < m) ? a[i * m + k] : 0.0f; }
                { int i = row0 + pa; int k = t + pb + 2; ((float*)As[pb + 2])[pa] = (i < n && k < m) ? a[i * m + k] : 0.0f; }
                { int i = row0 + pa; int k = t + pb + 3; ((float*)As[pb + 3])[pa] = (i < n && k < m) ? a[i * m + k] : 0.0f; }
            } }
        }
        #pragma unroll
        for (int e = 0; e < 1; ++e) {
            const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
            { int j = col0 + pa; int k = t + pb;
            if (vb0 && j < n && k + 3 < m) {
                const float4 v = *(const float4*)&(a[j * m + k]);
                ((float*)Bs[pb + 0])[pa] = v.x;
                ((float*)Bs[pb + 1])[pa] = v.y;
                ((float*)Bs[pb + 2])[pa] = v.z;
                ((float*)Bs[pb + 3])[pa] = v.w;
            } else {
                { int j = col0 + pa; int k = t + pb + 0; ((float*)Bs[pb + 0])[pa] = (j < n && k < m) ? a[j * m + k] : 0.0f; }
                { int j = col0 + pa; int k = t + pb + 1; ((float*)Bs[pb + 1])[pa] = (j < n && k < m) ? a[j * m + k] : 0.0f; }
                { int j = col0 + pa; int k = t + pb + 2; ((float*)Bs[pb + 2])[pa] = (j < n && k < m) ? a[j * m + k] : 0.0f; }
                { int j = col0 + pa; int k = t + pb + 3; ((float*)Bs[pb + 3])[pa] = (j < n && k < m) ? a[j * m + k] : 0.0f; }
            } }
        }
        __syncthreads();
        if (t + 8 <= m) {
            #pragma unroll
            for (int kk = 0; kk < 8; ++kk) {
                float ra0[8];
                { const float4 v = As[kk][ty]; ra0[0] = v.x; ra0[1] = v.y; ra0[2] = v.z; ra0[3] = v.w; }
                { const float4 v = As[kk][ty + 16]; ra0[4] = v.x; ra0[5] = v.y; ra0[6] = v.z; ra0[7] = v.w; }
                float rb0[8];
                { const float4 v = Bs[kk][tx]; rb0[0] = v.x; rb0[1] = v.y; rb0[2] = v.z; rb0[3] = v.w; }
                { const float4 v = Bs[kk][tx + 16]; rb0[4] = v.x; rb0[5] = v.y; rb0[6] = v.z; rb0[7] = v.w; }
                #pragma unroll
                for (int m1 = 0; m1 < 64; ++m1)
                    acc[m1] += alpha * ra0[m1 / 8] * rb0[m1 % 8];
            }
        } else {
            for (int kk = 0; kk < m - t; ++kk) {
                float ra0[8];
                { const float4 v = As[kk][ty]; ra0[0] = v.x; ra0[1] = v.y; ra0[2] = v.z; ra0[3] = v.w; }
                { const float4 v = As[kk][ty + 16]; ra0[4] = v.x; ra0[5] = v.y; ra0[6] = v.z; ra0[7] = v.w; }
                float rb0[8];
                { const float4 v = Bs[kk][tx]; rb0[0] = v.x; rb0[1] = v.y; rb0[2] = v.z; rb0[3] = v.w; }
                { const float4 v = Bs[kk][tx + 16]; rb0[4] = v.x; rb0[5] = v.y; rb0[6] = v.z; rb0[7] = v.w; }
                #pragma unroll
                for (int m1 = 0; m1 < 64; ++m1)
                    acc[m1] += alpha * ra0[m1 / 8] * rb0[m1 % 8];
            }
        }
        __syncthreads();
    }
    #pragma unroll
    for (int m1 = 0; m1 < 64; ++m1) {
        int i = row0 + ty * 4 + m1 / 8 % 4 + m1 / 32 * 64;
        int j = col0 + tx * 4 + m1 % 4 + m1 % 8 / 4 * 64;
        if (i < n && j < n) {
            c[i * n + j] *= beta;
            c[i * n + j] += acc[m1];
        }
    }
    if (row0 != col0) {
        #pragma unroll
        for (int m1 = 0; m1 < 64; ++m1) {
            int j = row0 + ty * 4 + m1 / 8 % 4 + m1 / 32 * 64;
            int i = col0 + tx * 4 + m1 % 4 + m1 % 8 / 4 * 64;
            if (i < n && j < n) {
                c[i * n + j] *= beta;
                c[i * n + j] += acc[m1];
            }
        }
    }
}
"""
_WORDS = ("lin", "tri", "bmaj", "bmin", "nmin", "nmaj", "grp", "red", "h")


@dataclass(frozen=True)
class ContractionTriangle:
    name: ClassVar[str] = "contraction-triangle"
    WHY_IT_EXISTS: ClassVar[str] = "triangular or symmetric (SYRK-like A A^T) products: one side of the diagonal"
    priority: ClassVar[int] = 9  # before contraction-blocking (10): where both apply, half the blocks (it refuses a GEMM)
    space: ClassVar[tuple[str, ...]] = ("contraction-triangle{tile=64 prefetch=true kgroups=2}", "contraction-triangle{tile=64 prefetch=true}",
                                        "contraction-triangle{prefetch=true}", "contraction-triangle{tile=64}", "contraction-triangle")
    bk: int = 8
    prefetch: bool = False
    tile: int = 128
    kgroups: int = 1

    def applies(self, facts: KernelFacts) -> bool | str:
        why = "tile must be 128 or 64" if self.tile not in {128, 64} else group_refusal(self.tile, self.kgroups, self.prefetch, self.bk, 2, facts.dialect == "opencl")
        return why or ContractionBlocking(bk=self.bk, prefetch=self.prefetch).applies(facts)

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        c = find_contraction(source, facts.dialect, facts.name)
        if isinstance(c, str):
            return Refused(c)
        model = model_and_body(source, facts.dialect, facts.name)[0]  # type: ignore[index]  # find_contraction found it
        guard = next((g for g in model.guards if g.start == c.rest[0]), None)
        if not c.guarded or guard is None:
            return Refused("needs a guard bounding the outputs")
        if any(c.offsets):
            return Refused(f"{c.row} and {c.col} must be the thread indices without an offset")
        tri, mirror = triangle(guard, c.row, c.col), False
        if not tri:
            why = symmetric(source, facts, model, guard, c)
            if why:
                return Refused(f"neither a triangular guard ({c.col} <= {c.row} or {c.row} <= {c.col}) nor a symmetric product: {why}")
            tri, mirror = "lower", True
        base = ContractionBlocking(bk=self.bk, prefetch=self.prefetch)
        out = base.rewrite(source, facts)
        if isinstance(out, Refused) or (why := group_refusal(self.tile, self.kgroups, self.prefetch, self.bk, len(c.a) + len(c.b), facts.dialect == "opencl")):
            return out if isinstance(out, Refused) else Refused(why)
        n = base.names(source, facts, c)  # the same rewrite with the tile map and the stores of this form: only the body changes
        n.update({w: fresh_names(n, source, facts, w) for w in _WORDS})
        code = TriangleCode(self.bk, self.prefetch, c, n, facts.dialect == "opencl", source, tri, mirror, self.tile, self.kgroups).lines()
        body = Edit(c.start, c.rest[1], ("\n" + c.indent).join(code))
        lb = bounds(self.tile, self.kgroups, self.prefetch, len(c.a) + len(c.b))
        edits = tuple(body if (e.start, e.end) == (c.start, c.rest[1]) else replace(e, text=lb) if e.start == e.end else e
                      for e in out.edits)
        launch = LaunchChange((self.tile // 8, self.tile // 8, self.kgroups), "tile-coarse", per_item=self.tile)
        what = f"the tiles {'below' if tri == 'lower' else 'above'} the diagonal only" + \
            (f", each written at ({c.row}, {c.col}) and ({c.col}, {c.row})" if mirror else "") + (f", {self.kgroups} groups of threads splitting k" if self.kgroups > 1 else "")
        return Rewrite(edits, launch, f"{what}; {out.note.replace('128x128', f'{self.tile}x{self.tile}')}")
