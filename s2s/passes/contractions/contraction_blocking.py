"""contraction-blocking: a float contraction over k (from the kernel model) becomes a 128x128-tiled product, 8x8 outputs per thread.

The structure of a fast hand-written SGEMM, for any operand layout the contraction model accepts (A[i][k]·B[k][j],
A[i][k]·A[j][k], A[k][i]·B[k][j], several operands a side) and wherever it accumulates (a local, or global memory
scaled first). 256 threads (16 x 16) share a 128 x 128 block of outputs; each thread holds 8 x 8 of them in
registers: rows ty*4 + {0..3} and ty*4 + 64 + {0..3}, columns likewise with tx, so that per k step its 8 row values
and 8 column values come out of the k-major shared tiles (`As[bk][128 + 4]`) as two float4 each. Global loads go
along each operand's unit-stride index four elements at a time where a uniform run-time check (the operand's base
and leading dimension 16-byte aligned, a stride of one along the loads' index) allows it and all four lie inside
the sizes; otherwise one element at a time, guarded and zero-padded. A block with no output inside the guard (above
the diagonal of a triangular update, as in the example) leaves at once; CUDA gets __launch_bounds__(256, lb). Where the
guard is a rectangle (`row < R && col < C`), blocks wholly inside it run an unguarded copy of the loop (`full`,
s2s/passes/contractions/_blocking_full.py; `vstore`: float4 stores there). With `prefetch`, the next k slice is loaded into registers while the current one is
multiplied (one barrier per slice, two shared buffers). Every output still adds its terms in ascending k, starting
from the accumulator's value after the statements before the loop, so the result is the original's bit for bit."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.contraction import Contraction, find_contraction
from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import model_and_body

from ..common.tree import body_node, fresh
from ._blocking_body import body
from ._blocking_code import THREADS, TILE, BlockingCode
from ._blocking_full import rectangle
from ._blocking_store import is_float, one_store

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void syrk(int n, int m, float alpha, float beta, const float* a, float* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (j <= i && i < n && j < n) {
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
    const int row0 = blockIdx.y * 128, col0 = blockIdx.x * 128;
    int live = 0;
    #pragma unroll
    for (int m1 = 0; m1 < 64; ++m1) {
        int i = row0 + ty * 4 + m1 / 8 % 4 + m1 / 32 * 64;
        int j = col0 + tx * 4 + m1 % 4 + m1 % 8 / 4 * 64;
        acc[m1] = 0;
        if (j <= i && i < n && j < n) {
            c[i * n + j] *= beta;
            acc[m1] = c[i * n + j];
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
        if (j <= i && i < n && j < n) {
            c[i * n + j] = acc[m1];
        }
    }
}
"""


@dataclass(frozen=True)
class ContractionBlocking:
    name: ClassVar[str] = "contraction-blocking"
    WHY_IT_EXISTS: ClassVar[str] = "float matrix products of any layout, as a hand-written SGEMM's 128x128 blocking"
    priority: ClassVar[int] = 10  # before contraction-tiling (15) and register-blocking (20): the fastest form first
    space: ClassVar[tuple[str, ...]] = ("contraction-blocking", "contraction-blocking{prefetch=true lb=1 vstore=true}",
                                        "contraction-blocking{prefetch=true}", "contraction-blocking{bk=16}")
    bk: int = 8  # the k slice staged per step
    vec: bool = True  # float4 global loads where the run-time check allows them
    prefetch: bool = False  # load the next slice into registers while the current one is multiplied
    full: bool = True  # also an unguarded copy of the loop for blocks wholly inside the sizes (s2s/passes/contractions/_blocking_full.py)
    lb: int = 2  # CUDA: __launch_bounds__(256, lb): 2 caps a thread at 128 registers, 1 at 255
    vstore: bool = False  # a full block's one store after the loop as float4 where a run-time check allows it

    def applies(self, facts: KernelFacts) -> bool | str:
        if self.bk not in {8, 16}:
            return "bk must be 8 or 16"
        if self.lb not in {1, 2}:
            return "lb must be 1 or 2"
        if self.vstore and not self.full:
            return "vstore needs full (it changes the full blocks' stores)"
        if facts.shared or facts.atomics:
            return "kernel already uses shared memory or atomics"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        c = find_contraction(source, facts.dialect, facts.name)
        if isinstance(c, str):
            return Refused(c)
        if not c.guarded:
            return Refused("needs a guard bounding the outputs (a launch that covers them exactly keeps its launch: register-blocking)")
        tys = [(p.base_type if (p := facts.param(o.array)) is not None else "") for o in c.a + c.b]
        held = facts.param(c.target_array)
        acc_ty = c.target_decl.strip() or (held.base_type if held is not None else "")
        if not all(is_float(t, source, facts.dialect) for t in [*tys, acc_ty]):
            return Refused(f"the float4 form needs float operands and a float accumulator (here {'/'.join(tys + [acc_ty])})")
        n = self.names(source, facts, c)
        bound = re.search(r"\(\s*(\d+)", facts.launch_bounds)
        if bound is not None and int(bound.group(1)) < THREADS:
            return Refused(f"__launch_bounds__ allows at most {bound.group(1)} threads per block ({THREADS} needed)")
        model = model_and_body(source, facts.dialect, facts.name)[0]  # type: ignore[index]  # find_contraction found it
        # the copy where one operand stands a side, or with 255 registers (two a side spill 24 bytes at 128); CUDA only:
        # PoCL 3.1 ran the guarded text wrong with the barriers under a uniform branch
        full = self.full and self.vec and facts.dialect != "opencl" and (len(c.a) + len(c.b) == 2 or self.lb == 1) and rectangle(next((g for g in model.guards if g.start == c.rest[0]), None), c.row, c.col)
        stores = one_store(source, c, model) if self.vstore and full else None
        code = body(BlockingCode(self.bk, self.vec, self.prefetch, c, n, facts.dialect == "opencl", source, full=full, stores=stores))
        edits = [Edit(c.start, c.rest[1], ("\n" + c.indent).join(code))]
        if facts.dialect != "opencl" and not facts.launch_bounds:  # at most 128 registers a thread: two blocks per SM
            decl = body_node(source, facts).parent.child_by_field_name("declarator")  # type: ignore[union-attr]
            if decl is not None:
                edits.insert(0, Edit(decl.start_byte, decl.start_byte, f"__launch_bounds__({THREADS}, {self.lb}) "))
        launch, sides = LaunchChange((16, 16, 1), "tile-coarse", per_item=TILE), ", ".join([f"{o.text} along {c.k if o.k_fast else c.row}" for o in c.a] + [f"{o.text} along {c.k if o.k_fast else c.col}" for o in c.b])
        extra = (", float4 loads where aligned" if self.vec else "") + (", next slice prefetched" if self.prefetch else "") + \
            (", an unguarded copy for full blocks" if full else "") + (", float4 stores there" if stores else "")
        return Rewrite(tuple(edits), launch, f"128x128 tiles, 8x8 outputs per thread, k slices of {self.bk}{extra}: {sides}")

    def names(self, source: bytes, facts: KernelFacts, c: Contraction) -> dict[str, str]:  # the tiled body's, each fresh
        n = {w: fresh(facts, source, w) for w in ("acc", "tx", "ty", "tid", "row0", "col0", "t", "e", "kk", "m", "v", "pa", "pb",
                                                   "buf", "live", "alive", "p0", "full", "vc", "w")}
        for side, i in [(side, i) for side, ops in (("A", c.a), ("B", c.b)) for i in range(len(ops))]:
            for key, want in (("s", f"{side}s"), ("r", f"r{side.lower()}"), ("v", f"v{side.lower()}"), ("p", f"p{side.lower()}")):
                # per operand: its shared tile, its fragment, its alignment flag, its prefetch registers
                n[f"{key}{side}{i}"] = fresh(facts, source, want if (i == 0 and key == "s") else f"{want}{i + (key == 's')}")
        return n
