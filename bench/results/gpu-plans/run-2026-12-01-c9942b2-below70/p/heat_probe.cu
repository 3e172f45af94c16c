// heat_probe.cu -- zoo heat3d_zloop (3-D 7-point heat step, 512^3, 2-D grid over x,y, each thread marches z=1..510).
// Optimizer best 364.7 us (69% of floor); target <= 359 us (70%). Floor = 2 x 512 MiB / 4283 GB/s = 251.6 us.
// Variants (all compared over the whole output against orig_32x4; output zeroed before each check run):
//   orig_BXxBY       the zoo kernel verbatim, launch shapes 32x4, 32x16, 64x8
//   rc_32x4          restrict-const as generated (const __restrict__ u, __restrict__ unew)
//   walk_BXxBY       walk-registers as generated (w0/w1/w2 rotation, `first` flag), no restrict
//   walk_ro_32x4     walk-registers + __restrict__ on the output only;  walk_rr_32x4: on both
//   zc<CH>_BXxBY     clean rotation (both restrict), z split in CH chunks over grid.z
//   pipe<CH>_BXxBY   rotation + software pipeline: next plane's u[c+2P] and 4 in-plane neighbours loaded before the
//                    store of this plane, `#pragma unroll 2`
//   xv<V,CH>_BXxBY   V x-points a thread (float2/float4 for centre, c+-NX, c+P; scalar c-1/c+V), rotation along z
//   sgen_32x8        stencil-streaming as generated (2.5-D smem tile, halo loop over all threads, 2 syncs a plane)
//   sfix_BXxBY       2.5-D smem, ring threads only load the halo, next plane's centre + halo prefetched to registers
//                    one plane ahead (loads off the critical path), 2 syncs a plane
//   sdb_BXxBY        sfix with a double-buffered tile: 1 sync a plane
// Why sgen is slow (reading the text): each plane's u_zp1 load is consumed in the same iteration, and the halo
// loads are issued after the first __syncthreads and consumed right after the second one, so every plane pays two
// serialized DRAM round-trips for the whole block (barriers stop other warps of the block from running ahead);
// 1024 blocks = one wave, 510 planes x ~2 x ~1.5 us ~= 1500 us. The left/right halo columns are also 16 scalar
// uncoalesced loads per plane (lanes 0/1 of 8 warps), and the halo loop runs 4 guarded iterations in every thread.
// Timing: 3 warm-up, median of 25 launches, L2 flushed (128 MB write + read) before each.
// Error: max |a-b|/(1+|ref|) on the GPU.    nvcc -O3 -arch=sm_90 -lineinfo heat_probe.cu -o heat_probe && ./heat_probe
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(3); } } while (0)

#define NX 512
#define NY 512
#define NZ 512
#define P (NX * NY)

typedef void (*kern_t)(const float*, float*, float, float);

// ---------------- original ----------------
__global__ void heat3d_zloop(const float* u, float* unew, float c0, float c1)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || x >= NX - 1 || y < 1 || y >= NY - 1)
        return;
    for (int z = 1; z < NZ - 1; z++) {
        int c = (z * NY + y) * NX + x;
        unew[c] = c0 * u[c] + c1 * (u[c - 1] + u[c + 1] + u[c - NX] + u[c + NX] + u[c - NX * NY] + u[c + NX * NY]);
    }
}

// restrict-const as generated
__global__ void rc(const float* __restrict__ u, float* __restrict__ unew, float c0, float c1)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || x >= NX - 1 || y < 1 || y >= NY - 1)
        return;
    for (int z = 1; z < NZ - 1; z++) {
        int c = (z * NY + y) * NX + x;
        unew[c] = c0 * u[c] + c1 * (u[c - 1] + u[c + 1] + u[c - NX] + u[c + NX] + u[c - NX * NY] + u[c + NX * NY]);
    }
}

// ---------------- walk-registers as generated (+ restrict placements) ----------------
#define WALK_BODY                                                                                                      \
    int x = blockIdx.x * blockDim.x + threadIdx.x;                                                                     \
    int y = blockIdx.y * blockDim.y + threadIdx.y;                                                                     \
    if (x < 1 || x >= NX - 1 || y < 1 || y >= NY - 1)                                                                  \
        return;                                                                                                        \
    float w0, w1, w2;                                                                                                  \
    bool first = true;                                                                                                 \
    for (int z = 1; z < NZ - 1; z++) {                                                                                 \
        int c = (z * NY + y) * NX + x;                                                                                 \
        if (first) {                                                                                                   \
            w0 = u[c - NX * NY];                                                                                       \
            w1 = u[c];                                                                                                 \
            first = false;                                                                                             \
        }                                                                                                              \
        w2 = u[c + NX * NY];                                                                                           \
        unew[c] = c0 * w1 + c1 * (u[c - 1] + u[c + 1] + u[c - NX] + u[c + NX] + w0 + w2);                             \
        w0 = w1;                                                                                                       \
        w1 = w2;                                                                                                       \
    }
__global__ void walk(const float* u, float* unew, float c0, float c1) { WALK_BODY }
__global__ void walk_ro(const float* u, float* __restrict__ unew, float c0, float c1) { WALK_BODY }
__global__ void walk_rr(const float* __restrict__ u, float* __restrict__ unew, float c0, float c1) { WALK_BODY }

// ---------------- clean rotation, z chunks over grid.z ----------------
template <int CH>
__global__ void zc(const float* __restrict__ u, float* __restrict__ unew, float c0, float c1)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || x >= NX - 1 || y < 1 || y >= NY - 1)
        return;
    const int zlo = 1 + (int)blockIdx.z * (NZ - 2) / CH, zhi = 1 + ((int)blockIdx.z + 1) * (NZ - 2) / CH;
    int c = (zlo * NY + y) * NX + x;
    float w0 = u[c - P], w1 = u[c];
    for (int z = zlo; z < zhi; z++, c += P) {
        float w2 = u[c + P];
        unew[c] = c0 * w1 + c1 * (u[c - 1] + u[c + 1] + u[c - NX] + u[c + NX] + w0 + w2);
        w0 = w1;
        w1 = w2;
    }
}

// ---------------- rotation + software pipeline (next plane's loads before this plane's store) ----------------
template <int CH>
__global__ void pipe(const float* __restrict__ u, float* __restrict__ unew, float c0, float c1)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || x >= NX - 1 || y < 1 || y >= NY - 1)
        return;
    const int zlo = 1 + (int)blockIdx.z * (NZ - 2) / CH, zhi = 1 + ((int)blockIdx.z + 1) * (NZ - 2) / CH;
    int c = (zlo * NY + y) * NX + x;
    float w0 = u[c - P], w1 = u[c], w2 = u[c + P];
    float a = u[c - 1], b = u[c + 1], d = u[c - NX], e = u[c + NX];
#pragma unroll 2
    for (int z = zlo; z < zhi; z++) {
        const int cn = (z + 1 < zhi) ? c + P : c;  // next plane (clamped on the last one: loads stay in bounds)
        const float n2 = u[cn + P], na = u[cn - 1], nb = u[cn + 1], nd = u[cn - NX], ne = u[cn + NX];
        unew[c] = c0 * w1 + c1 * (a + b + d + e + w0 + w2);
        w0 = w1; w1 = w2; w2 = n2;
        a = na; b = nb; d = nd; e = ne;
        c += P;
    }
}

// ---------------- V x-points a thread, rotation along z ----------------
template <int V> struct vec;
template <> struct vec<2> { typedef float2 T; };
template <> struct vec<4> { typedef float4 T; };
template <int V>
__device__ __forceinline__ void ldv(const float* __restrict__ p, float* v)
{
    typename vec<V>::T t = *reinterpret_cast<const typename vec<V>::T*>(p);
    const float* f = reinterpret_cast<const float*>(&t);
#pragma unroll
    for (int i = 0; i < V; i++) v[i] = f[i];
}

template <int V, int CH>
__global__ void xv(const float* __restrict__ u, float* __restrict__ unew, float c0, float c1)
{
    const int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * V;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x0 >= NX || y < 1 || y >= NY - 1)
        return;
    const int zlo = 1 + (int)blockIdx.z * (NZ - 2) / CH, zhi = 1 + ((int)blockIdx.z + 1) * (NZ - 2) / CH;
    const bool lo = x0 > 0, hi = x0 + V < NX;
    int c = (zlo * NY + y) * NX + x0;
    float m[V], k[V];
    ldv<V>(u + c - P, m);
    ldv<V>(u + c, k);
    for (int z = zlo; z < zhi; z++, c += P) {
        float p[V], n[V], s[V], o[V];
        ldv<V>(u + c + P, p);
        ldv<V>(u + c - NX, n);
        ldv<V>(u + c + NX, s);
        const float l = lo ? u[c - 1] : 0.0f, r = hi ? u[c + V] : 0.0f;
#pragma unroll
        for (int i = 0; i < V; i++) {
            const float left = i == 0 ? l : k[i - 1], right = i == V - 1 ? r : k[i + 1];
            o[i] = c0 * k[i] + c1 * (left + right + n[i] + s[i] + m[i] + p[i]);
        }
        if (lo && hi) {
            typename vec<V>::T t;
            float* f = reinterpret_cast<float*>(&t);
#pragma unroll
            for (int i = 0; i < V; i++) f[i] = o[i];
            *reinterpret_cast<typename vec<V>::T*>(unew + c) = t;
        } else {
#pragma unroll
            for (int i = 0; i < V; i++)
                if (x0 + i >= 1 && x0 + i < NX - 1) unew[c + i] = o[i];
        }
#pragma unroll
        for (int i = 0; i < V; i++) { m[i] = k[i]; k[i] = p[i]; }
    }
}

// ---------------- stencil-streaming as generated (block 32x8) ----------------
__global__ void sgen(const float* u, float* unew, float c0, float c1)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    __shared__ float u_tile[10][34];
    const bool active = !(x < 1 || x >= NX - 1 || y < 1 || y >= NY - 1);
    const bool own = 1 < NY - 1 && 1 < NX - 1 && ((y >= 0 && y < NY && x >= 1 && x < NX - 1) || (y >= 1 && y < NY - 1 && x >= 0 && x < NX));
    const int zlo = 1;
    const int zhi = NZ - 1;
    float u_zm1 = 0, u_z0 = 0, u_zp1 = 0;
    if (active) u_zm1 = u[NX*NY * (zlo - 1) + NX * y + x];
    if (active || (own && zlo < zhi)) u_z0 = u[NX*NY * (zlo) + NX * y + x];
    for (int z = zlo; z < zhi; z++) {
        if (active || (own && z + 1 < zhi)) u_zp1 = u[NX*NY * (z + 1) + NX * y + x];
        __syncthreads();
        u_tile[threadIdx.y + 1][threadIdx.x + 1] = u_z0;
        for (int ly = threadIdx.y; ly < 10; ly += 8)
            for (int lx = threadIdx.x; lx < 34; lx += 32) {
                if (!(ly < 1 || ly >= 9 || lx < 1 || lx >= 33))
                    continue;
                int gy = (int)blockIdx.y * 8 + ly - 1;
                int gx = (int)blockIdx.x * 32 + lx - 1;
                u_tile[ly][lx] = (1 < NY - 1 && 1 < NX - 1 && ((gy >= 0 && gy < NY && gx >= 1 && gx < NX - 1) || (gy >= 1 && gy < NY - 1 && gx >= 0 && gx < NX))) ? u[NX*NY * z + NX * gy + gx] : (float)0;
            }
        __syncthreads();
        if (active) {
            int c = (z * NY + y) * NX + x;
            unew[c] = c0 * u_z0 + c1 * (u_tile[threadIdx.y + 1][threadIdx.x] + u_tile[threadIdx.y + 1][threadIdx.x + 2] + u_tile[threadIdx.y][threadIdx.x + 1] + u_tile[threadIdx.y + 2][threadIdx.x + 1] + u_zm1 + u_zp1);
        }
        u_zm1 = u_z0;
        u_z0 = u_zp1;
    }
}

// ---------------- fixed 2.5-D smem: ring-only halo, loads one plane ahead; DB = double-buffered tile ----------------
// ring: warp-row ty==0 loads the top halo row, ty==BY-1 the bottom one, ty==1 lanes [0,BY) the left column and
// lanes [BY,2BY) the right column (needs 2 <= BY, 2*BY <= BX). NX, NY multiples of BX, BY: every (x,y) in range.
template <int BX, int BY, bool DB>
__global__ void __launch_bounds__(BX * BY) sfix(const float* __restrict__ u, float* __restrict__ unew, float c0, float c1)
{
    __shared__ float t[DB ? 2 : 1][BY + 2][BX + 2];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x = blockIdx.x * BX + tx, y = blockIdx.y * BY + ty;
    const bool active = x >= 1 && x < NX - 1 && y >= 1 && y < NY - 1;
    int hly = -1, hlx = -1;
    if (ty == 0) { hly = 0; hlx = tx + 1; }
    else if (ty == BY - 1) { hly = BY + 1; hlx = tx + 1; }
    else if (ty == 1 && tx < BY) { hly = tx + 1; hlx = 0; }
    else if (ty == 1 && tx < 2 * BY) { hly = tx - BY + 1; hlx = BX + 1; }
    const int gy = (int)blockIdx.y * BY + hly - 1, gx = (int)blockIdx.x * BX + hlx - 1;
    const bool hr = hly >= 0, hv = hr && gy >= 0 && gy < NY && gx >= 0 && gx < NX;
    const int hoff = hv ? gy * NX + gx : 0;
    const int cc = y * NX + x;
    float zm = u[cc], z0 = u[P + cc], zp = u[2 * P + cc];
    float h = hv ? u[P + hoff] : 0.0f;
    for (int z = 1; z < NZ - 1; z++) {
        const int b = DB ? (z & 1) : 0;
        const float zpp = (z + 2 < NZ) ? u[(z + 2) * P + cc] : 0.0f;
        const float hn = (hv && z + 1 < NZ - 1) ? u[(z + 1) * P + hoff] : 0.0f;
        if (!DB) __syncthreads();
        t[b][ty + 1][tx + 1] = z0;
        if (hr) t[b][hly][hlx] = h;
        __syncthreads();
        if (active)
            unew[z * P + cc] = c0 * z0 + c1 * (t[b][ty + 1][tx] + t[b][ty + 1][tx + 2] + t[b][ty][tx + 1] + t[b][ty + 2][tx + 1] + zm + zp);
        zm = z0; z0 = zp; zp = zpp; h = hn;
    }
}

// ---------------- harness ----------------
static float* g_flush;
static float* g_sink;
__global__ void flush_read(const float4* b, size_t n4, float* sink)
{
    float a = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = b[i];
        a += v.x + v.y + v.z + v.w;
    }
    if (a == 123.456f) *sink = a;  // keeps the reads
}
static void flush_l2()
{
    const size_t bytes = 128u << 20;
    CK(cudaMemsetAsync(g_flush, 1, bytes));
    flush_read<<<132 * 8, 512>>>(reinterpret_cast<const float4*>(g_flush), bytes / 16, g_sink);
}

template <class L>
static float time_it(L launch)
{
    for (int i = 0; i < 3; i++) launch();
    CK(cudaDeviceSynchronize());
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int i = 0; i < 25; i++) {
        flush_l2();
        CK(cudaEventRecord(a));
        launch();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1000.0f);
    }
    CK(cudaGetLastError());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

__global__ void init_u(float* u, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned s = (unsigned)i * 2654435761u + 12345u;
        s ^= s >> 15; s *= 2246822519u; s ^= s >> 13; s *= 3266489917u; s ^= s >> 16;
        u[i] = (float)(s >> 8) / 16777216.0f;
    }
}
// max |a-b|/(1+|ref|) as float bits (non-negative floats order as ints)
__global__ void err_max(const float* a, const float* ref, size_t n, unsigned* out)
{
    float m = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        m = fmaxf(m, fabsf(a[i] - ref[i]) / (1.0f + fabsf(ref[i])));
    if (m != m) m = 1e30f;
    atomicMax(out, __float_as_uint(m));
}

// walk-registers{chunks=4 cols=2} and launch-config{block=32x8},walk-registers{chunks=8 cols=4} as generated at 4803d0f
__global__ void gen_c4v2(const float* u, float* unew, float c0, float c1)
{
    int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * 2;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    const bool in0 = !(x0 < 1 || x0 >= NX - 1 || y < 1 || y >= NY - 1);
    const bool in1 = !((x0 + 1) < 1 || (x0 + 1) >= NX - 1 || y < 1 || y >= NY - 1);
    if (!(in0 || in1))
        return;
    const bool full = in0 && in1;
    const int zlo = (int)((long long)(1) + (long long)blockIdx.z * ((NZ - 1) > (1) ? (long long)(NZ - 1) - (long long)(1) : 0LL) / 4);
    const int zhi = (int)((long long)(1) + ((long long)blockIdx.z + 1) * ((NZ - 1) > (1) ? (long long)(NZ - 1) - (long long)(1) : 0LL) / 4);
    float wc0, wc1, wc2, wc3, wc4, wc5, wc6, wc7, wc8, wc9, wc10, wc11;
    bool first = true;
    bool aligned = false;
    for (int z = zlo; z < zhi; z++) {
        int c = (z * NY + y) * NX + x0;
        int c_1 = (z * NY + y) * NX + (x0 + 1);
        if (first) {
            if (full && ((size_t)(u + (c - NX * NY)) & 7) == 0 && ((size_t)(u + (c)) & 7) == 0) {
                { float2 t = *(const float2*)(u + (c - NX * NY)); wc0 = t.x; wc1 = t.y; }
                { float2 t = *(const float2*)(u + (c)); wc3 = t.x; wc4 = t.y; }
            } else {
                wc0 = (in0 || in1) ? u[c - NX * NY] : (float)0;
                wc1 = (in0 || in1) ? u[(c - NX * NY) + 1] : (float)0;
                wc3 = (in0 || in1) ? u[c] : (float)0;
                wc4 = (in0 || in1) ? u[(c) + 1] : (float)0;
            }
            first = false;
            aligned = full && ((size_t)(u + (c + NX * NY)) & 7) == 0 && ((size_t)(u + (c - NX)) & 7) == 0 && ((size_t)(u + (c + NX)) & 7) == 0;
        }
        if (aligned) {
            { float2 t = *(const float2*)(u + (c + NX * NY)); wc6 = t.x; wc7 = t.y; }
            { float2 t = *(const float2*)(u + (c - NX)); wc8 = t.x; wc9 = t.y; }
            { float2 t = *(const float2*)(u + (c + NX)); wc10 = t.x; wc11 = t.y; }
        } else {
            wc6 = (in0 || in1) ? u[c + NX * NY] : (float)0;
            wc7 = (in0 || in1) ? u[(c + NX * NY) + 1] : (float)0;
            wc8 = (in0) ? u[c - NX] : (float)0;
            wc9 = (in1) ? u[(c - NX) + 1] : (float)0;
            wc10 = (in0) ? u[c + NX] : (float)0;
            wc11 = (in1) ? u[(c + NX) + 1] : (float)0;
        }
        wc2 = (in0) ? u[(c) - 1] : (float)0;
        wc5 = (in1) ? u[(c) + 2] : (float)0;
        if (full && ((size_t)(unew + (c)) & 7) == 0) {
            float2 t;
            t.x = c0 * wc3 + c1 * (wc2 + wc4 + wc8 + wc10 + wc0 + wc6);
            t.y = c0 * wc4 + c1 * (wc3 + wc5 + wc9 + wc11 + wc1 + wc7);
            *(float2*)(unew + (c)) = t;
        } else {
            if (in0) {
                unew[c] = c0 * wc3 + c1 * (wc2 + wc4 + wc8 + wc10 + wc0 + wc6);
            }
            if (in1) {
                unew[c_1] = c0 * wc4 + c1 * (wc3 + wc5 + wc9 + wc11 + wc1 + wc7);
            }
        }
        wc0 = wc3;
        wc3 = wc6;
        wc1 = wc4;
        wc4 = wc7;
    }
}



__global__ void gen_c8v4(const float* u, float* unew, float c0, float c1)
{
    int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    const bool in0 = !(x0 < 1 || x0 >= NX - 1 || y < 1 || y >= NY - 1);
    const bool in1 = !((x0 + 1) < 1 || (x0 + 1) >= NX - 1 || y < 1 || y >= NY - 1);
    const bool in2 = !((x0 + 2) < 1 || (x0 + 2) >= NX - 1 || y < 1 || y >= NY - 1);
    const bool in3 = !((x0 + 3) < 1 || (x0 + 3) >= NX - 1 || y < 1 || y >= NY - 1);
    if (!(in0 || in1 || in2 || in3))
        return;
    const bool full = in0 && in1 && in2 && in3;
    const int zlo = (int)((long long)(1) + (long long)blockIdx.z * ((NZ - 1) > (1) ? (long long)(NZ - 1) - (long long)(1) : 0LL) / 8);
    const int zhi = (int)((long long)(1) + ((long long)blockIdx.z + 1) * ((NZ - 1) > (1) ? (long long)(NZ - 1) - (long long)(1) : 0LL) / 8);
    float wc0, wc1, wc2, wc3, wc4, wc5, wc6, wc7, wc8, wc9, wc10, wc11, wc12, wc13, wc14, wc15, wc16, wc17, wc18, wc19, wc20, wc21;
    bool first = true;
    bool aligned = false;
    for (int z = zlo; z < zhi; z++) {
        int c = (z * NY + y) * NX + x0;
        int c_1 = (z * NY + y) * NX + (x0 + 1);
        int c_2 = (z * NY + y) * NX + (x0 + 2);
        int c_3 = (z * NY + y) * NX + (x0 + 3);
        if (first) {
            if (full && ((size_t)(u + (c - NX * NY)) & 15) == 0 && ((size_t)(u + (c)) & 15) == 0) {
                { float4 t = *(const float4*)(u + (c - NX * NY)); wc0 = t.x; wc1 = t.y; wc2 = t.z; wc3 = t.w; }
                { float4 t = *(const float4*)(u + (c)); wc5 = t.x; wc6 = t.y; wc7 = t.z; wc8 = t.w; }
            } else {
                wc0 = (in0 || in1) ? u[c - NX * NY] : (float)0;
                wc1 = (in0 || in1 || in2) ? u[(c - NX * NY) + 1] : (float)0;
                wc2 = (in1 || in2 || in3) ? u[(c - NX * NY) + 2] : (float)0;
                wc3 = (in2 || in3) ? u[(c - NX * NY) + 3] : (float)0;
                wc5 = (in0 || in1) ? u[c] : (float)0;
                wc6 = (in0 || in1 || in2) ? u[(c) + 1] : (float)0;
                wc7 = (in1 || in2 || in3) ? u[(c) + 2] : (float)0;
                wc8 = (in2 || in3) ? u[(c) + 3] : (float)0;
            }
            first = false;
            aligned = full && ((size_t)(u + (c + NX * NY)) & 15) == 0 && ((size_t)(u + (c - NX)) & 15) == 0 && ((size_t)(u + (c + NX)) & 15) == 0;
        }
        if (aligned) {
            { float4 t = *(const float4*)(u + (c + NX * NY)); wc10 = t.x; wc11 = t.y; wc12 = t.z; wc13 = t.w; }
            { float4 t = *(const float4*)(u + (c - NX)); wc14 = t.x; wc15 = t.y; wc16 = t.z; wc17 = t.w; }
            { float4 t = *(const float4*)(u + (c + NX)); wc18 = t.x; wc19 = t.y; wc20 = t.z; wc21 = t.w; }
        } else {
            wc10 = (in0 || in1) ? u[c + NX * NY] : (float)0;
            wc11 = (in0 || in1 || in2) ? u[(c + NX * NY) + 1] : (float)0;
            wc12 = (in1 || in2 || in3) ? u[(c + NX * NY) + 2] : (float)0;
            wc13 = (in2 || in3) ? u[(c + NX * NY) + 3] : (float)0;
            wc14 = (in0) ? u[c - NX] : (float)0;
            wc15 = (in1) ? u[(c - NX) + 1] : (float)0;
            wc16 = (in2) ? u[(c - NX) + 2] : (float)0;
            wc17 = (in3) ? u[(c - NX) + 3] : (float)0;
            wc18 = (in0) ? u[c + NX] : (float)0;
            wc19 = (in1) ? u[(c + NX) + 1] : (float)0;
            wc20 = (in2) ? u[(c + NX) + 2] : (float)0;
            wc21 = (in3) ? u[(c + NX) + 3] : (float)0;
        }
        wc4 = (in0) ? u[(c) - 1] : (float)0;
        wc9 = (in3) ? u[(c) + 4] : (float)0;
        if (full && ((size_t)(unew + (c)) & 15) == 0) {
            float4 t;
            t.x = c0 * wc5 + c1 * (wc4 + wc6 + wc14 + wc18 + wc0 + wc10);
            t.y = c0 * wc6 + c1 * (wc5 + wc7 + wc15 + wc19 + wc1 + wc11);
            t.z = c0 * wc7 + c1 * (wc6 + wc8 + wc16 + wc20 + wc2 + wc12);
            t.w = c0 * wc8 + c1 * (wc7 + wc9 + wc17 + wc21 + wc3 + wc13);
            *(float4*)(unew + (c)) = t;
        } else {
            if (in0) {
                unew[c] = c0 * wc5 + c1 * (wc4 + wc6 + wc14 + wc18 + wc0 + wc10);
            }
            if (in1) {
                unew[c_1] = c0 * wc6 + c1 * (wc5 + wc7 + wc15 + wc19 + wc1 + wc11);
            }
            if (in2) {
                unew[c_2] = c0 * wc7 + c1 * (wc6 + wc8 + wc16 + wc20 + wc2 + wc12);
            }
            if (in3) {
                unew[c_3] = c0 * wc8 + c1 * (wc7 + wc9 + wc17 + wc21 + wc3 + wc13);
            }
        }
        wc0 = wc5;
        wc5 = wc10;
        wc1 = wc6;
        wc6 = wc11;
        wc2 = wc7;
        wc7 = wc12;
        wc3 = wc8;
        wc8 = wc13;
    }
}



int main()
{
    CK(cudaMalloc(&g_flush, 128u << 20));
    CK(cudaMalloc(&g_sink, 4));
    const size_t n = (size_t)NX * NY * NZ;
    float *du, *dout, *dref;
    unsigned* derr;
    CK(cudaMalloc(&du, n * 4)); CK(cudaMalloc(&dout, n * 4)); CK(cudaMalloc(&dref, n * 4)); CK(cudaMalloc(&derr, 4));
    init_u<<<132 * 8, 512>>>(du, n);
    CK(cudaMemset(dref, 0, n * 4));
    const float c0 = 0.4f, c1 = 0.1f;
    heat3d_zloop<<<dim3(NX / 32, NY / 4), dim3(32, 4)>>>(du, dref, c0, c1);
    CK(cudaDeviceSynchronize());
    const double floor_us = 2.0 * n * 4 / 4283e3;
    float t0 = time_it([&] { heat3d_zloop<<<dim3(NX / 32, NY / 4), dim3(32, 4)>>>(du, dout, c0, c1); });
    printf("# heat3d_zloop 512^3 floor %.1f us (2 x 512 MiB / 4283 GB/s); columns: name us speedup floor%% err\n", floor_us);
    auto run = [&](const char* name, kern_t k, dim3 g, dim3 b) {
        auto launch = [&] { k<<<g, b>>>(du, dout, c0, c1); };
        CK(cudaMemset(dout, 0, n * 4));
        launch();
        CK(cudaGetLastError());
        CK(cudaMemset(derr, 0, 4));
        err_max<<<132 * 8, 512>>>(dout, dref, n, derr);
        unsigned eb;
        CK(cudaMemcpy(&eb, derr, 4, cudaMemcpyDeviceToHost));
        float e;
        memcpy(&e, &eb, 4);
        float t = time_it(launch);
        printf("%-16s %8.1f %6.3fx %5.1f%%  err %.2e%s\n", name, t, t0 / t, 100.0 * floor_us / t, e, e > 1e-5f ? "  MISMATCH" : "");
        fflush(stdout);
    };
#define G2(V, BX, BY, CH) dim3(NX / (V) / (BX), NY / (BY), CH), dim3(BX, BY)
    run("orig_32x4", heat3d_zloop, G2(1, 32, 4, 1));
    run("xv2c4_32x4", xv<2, 4>, G2(2, 32, 4, 4));
    run("gen_c4v2_32x4", gen_c4v2, G2(2, 32, 4, 4));
    run("gen_c4v2_32x8", gen_c4v2, G2(2, 32, 8, 4));
    run("gen_c8v4_32x8", gen_c8v4, G2(4, 32, 8, 8));
    run("gen_c8v4_32x4", gen_c8v4, G2(4, 32, 4, 8));
    run("xv2c4_32x8", xv<2, 4>, G2(2, 32, 8, 4));
    run("xv4c4_32x4", xv<4, 4>, G2(4, 32, 4, 4));
    run("xv4c8_32x4", xv<4, 8>, G2(4, 32, 4, 8));
    run("xv4c8_32x8", xv<4, 8>, G2(4, 32, 8, 8));
    CK(cudaFree(du)); CK(cudaFree(dout)); CK(cudaFree(dref));
    return 0;
}
