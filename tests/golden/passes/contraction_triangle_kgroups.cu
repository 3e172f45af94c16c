// RUN: contraction-triangle{tile=64 kgroups=2}
// ----- INPUT
#define N 300
#define K 45

__global__ void lower(const float* __restrict__ a, float* __restrict__ c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (j > i || i >= N || j >= N)
        return;
    float s = 0.0f;
    for (int k = 0; k < K; k++)
        s += a[k * N + i] * a[k * N + j];
    c[i * N + j] = s;
}
// ----- EXPECTED
#define N 300
#define K 45

__global__ void __launch_bounds__(128, 4) lower(const float* __restrict__ a, float* __restrict__ c)
{
    __shared__ float4 As[2][8][17];
    __shared__ float4 Bs[2][8][17];
    __shared__ float red[4096];
    __shared__ int alive;
    float acc[64];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 8 + tx;
    const int grp = threadIdx.z;
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
    const int row0 = bmaj * 64, col0 = bmin * 64;
    int live = 0;
    #pragma unroll
    for (int m = 0; m < 64; ++m) {
        int i = row0 + ty * 4 + m / 8 % 4 + m / 32 * 32;
        int j = col0 + tx * 4 + m % 4 + m % 8 / 4 * 32;
        acc[m] = 0;
        if (!(j > i || i >= N || j >= N)) {
            if (grp == 0) {
                float s = 0.0f;
                acc[m] = s;
            }
            live = 1;
        }
    }
    if (tid == 0 && grp == 0) alive = 0;
    __syncthreads();
    if (live) alive = 1;
    __syncthreads();
    if (!alive) return;
    int va0 = 1;
    { int i = row0; int k = 0; va0 = va0 && ((size_t)(const void*)&(a[k * N + i]) % 16 == 0); }
    { int i = row0; int k = (0) + 1; va0 = va0 && ((size_t)(const void*)&(a[k * N + i]) % 16 == 0); }
    { int i = row0; int k = 0; const size_t p0 = (size_t)(const void*)&(a[k * N + i]); { int i = row0 + 1; int k = 0; va0 = va0 && ((size_t)(const void*)&(a[k * N + i]) == p0 + 4); } }
    int vb0 = 1;
    { int j = col0; int k = 0; vb0 = vb0 && ((size_t)(const void*)&(a[k * N + j]) % 16 == 0); }
    { int j = col0; int k = (0) + 1; vb0 = vb0 && ((size_t)(const void*)&(a[k * N + j]) % 16 == 0); }
    { int j = col0; int k = 0; const size_t p0 = (size_t)(const void*)&(a[k * N + j]); { int j = col0 + 1; int k = 0; vb0 = vb0 && ((size_t)(const void*)&(a[k * N + j]) == p0 + 4); } }
    for (int t = 0 + grp * 8; t < K + grp * 8; t += 16) {
        #pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int pa = (tid + e * 64) % 16 * 4, pb = (tid + e * 64) / 16;
            { int i = row0 + pa; int k = t + pb;
            if (va0 && i + 3 < N && k < K) {
                const float4 v = *(const float4*)&(a[k * N + i]);
                As[grp][pb][pa / 4] = v;
            } else {
                { int i = row0 + pa + 0; int k = t + pb; ((float*)As[grp][pb])[pa + 0] = (i < N && k < K) ? a[k * N + i] : 0.0f; }
                { int i = row0 + pa + 1; int k = t + pb; ((float*)As[grp][pb])[pa + 1] = (i < N && k < K) ? a[k * N + i] : 0.0f; }
                { int i = row0 + pa + 2; int k = t + pb; ((float*)As[grp][pb])[pa + 2] = (i < N && k < K) ? a[k * N + i] : 0.0f; }
                { int i = row0 + pa + 3; int k = t + pb; ((float*)As[grp][pb])[pa + 3] = (i < N && k < K) ? a[k * N + i] : 0.0f; }
            } }
        }
        #pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int pa = (tid + e * 64) % 16 * 4, pb = (tid + e * 64) / 16;
            { int j = col0 + pa; int k = t + pb;
            if (vb0 && j + 3 < N && k < K) {
                const float4 v = *(const float4*)&(a[k * N + j]);
                Bs[grp][pb][pa / 4] = v;
            } else {
                { int j = col0 + pa + 0; int k = t + pb; ((float*)Bs[grp][pb])[pa + 0] = (j < N && k < K) ? a[k * N + j] : 0.0f; }
                { int j = col0 + pa + 1; int k = t + pb; ((float*)Bs[grp][pb])[pa + 1] = (j < N && k < K) ? a[k * N + j] : 0.0f; }
                { int j = col0 + pa + 2; int k = t + pb; ((float*)Bs[grp][pb])[pa + 2] = (j < N && k < K) ? a[k * N + j] : 0.0f; }
                { int j = col0 + pa + 3; int k = t + pb; ((float*)Bs[grp][pb])[pa + 3] = (j < N && k < K) ? a[k * N + j] : 0.0f; }
            } }
        }
        __syncthreads();
        if (t + 8 <= K) {
            #pragma unroll
            for (int kk = 0; kk < 8; ++kk) {
                float ra0[8];
                { const float4 v = As[grp][kk][ty]; ra0[0] = v.x; ra0[1] = v.y; ra0[2] = v.z; ra0[3] = v.w; }
                { const float4 v = As[grp][kk][ty + 8]; ra0[4] = v.x; ra0[5] = v.y; ra0[6] = v.z; ra0[7] = v.w; }
                float rb0[8];
                { const float4 v = Bs[grp][kk][tx]; rb0[0] = v.x; rb0[1] = v.y; rb0[2] = v.z; rb0[3] = v.w; }
                { const float4 v = Bs[grp][kk][tx + 8]; rb0[4] = v.x; rb0[5] = v.y; rb0[6] = v.z; rb0[7] = v.w; }
                #pragma unroll
                for (int m = 0; m < 64; ++m)
                    acc[m] += ra0[m / 8] * rb0[m % 8];
            }
        } else {
            for (int kk = 0; kk < K - t; ++kk) {
                float ra0[8];
                { const float4 v = As[grp][kk][ty]; ra0[0] = v.x; ra0[1] = v.y; ra0[2] = v.z; ra0[3] = v.w; }
                { const float4 v = As[grp][kk][ty + 8]; ra0[4] = v.x; ra0[5] = v.y; ra0[6] = v.z; ra0[7] = v.w; }
                float rb0[8];
                { const float4 v = Bs[grp][kk][tx]; rb0[0] = v.x; rb0[1] = v.y; rb0[2] = v.z; rb0[3] = v.w; }
                { const float4 v = Bs[grp][kk][tx + 8]; rb0[4] = v.x; rb0[5] = v.y; rb0[6] = v.z; rb0[7] = v.w; }
                #pragma unroll
                for (int m = 0; m < 64; ++m)
                    acc[m] += ra0[m / 8] * rb0[m % 8];
            }
        }
        __syncthreads();
    }
    for (int h = 1; h < 2; ++h) {
        if (grp == h) {
            #pragma unroll
            for (int m = 0; m < 64; ++m) red[m * 64 + tid] = acc[m];
        }
        __syncthreads();
        if (grp == 0) {
            #pragma unroll
            for (int m = 0; m < 64; ++m) acc[m] += red[m * 64 + tid];
        }
        __syncthreads();
    }
    if (grp == 0) {
        #pragma unroll
        for (int m = 0; m < 64; ++m) {
            int i = row0 + ty * 4 + m / 8 % 4 + m / 32 * 32;
            int j = col0 + tx * 4 + m % 4 + m % 8 / 4 * 32;
            if (!(j > i || i >= N || j >= N)) {
                float s = acc[m];
                c[i * N + j] = s;
            }
        }
    }
}
