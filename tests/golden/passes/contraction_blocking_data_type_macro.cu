// RUN: contraction-blocking
// ----- INPUT
#define DATA_TYPE float
typedef DATA_TYPE real_t;

__global__ void gemm(int ni, int nj, int nk, DATA_TYPE alpha, DATA_TYPE beta, const DATA_TYPE* a, const real_t* b, DATA_TYPE* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if ((i < ni) && (j < nj)) {
        c[i * nj + j] *= beta;
        for (int k = 0; k < nk; k++)
            c[i * nj + j] += alpha * a[i * nk + k] * b[k * nj + j];
    }
}
// ----- EXPECTED
#define DATA_TYPE float
typedef DATA_TYPE real_t;

__global__ void __launch_bounds__(256, 2) gemm(int ni, int nj, int nk, DATA_TYPE alpha, DATA_TYPE beta, const DATA_TYPE* a, const real_t* b, DATA_TYPE* c)
{
    __shared__ float4 As[8][33];
    __shared__ float4 Bs[8][33];
    __shared__ int alive;
    float acc[64];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const int row0 = blockIdx.y * 128, col0 = blockIdx.x * 128;
    int va0 = 1;
    { int i = row0; int k = 0; va0 = va0 && ((size_t)(const void*)&(a[i * nk + k]) % 16 == 0); }
    { int i = row0 + 1; int k = 0; va0 = va0 && ((size_t)(const void*)&(a[i * nk + k]) % 16 == 0); }
    { int i = row0; int k = 0; const size_t p0 = (size_t)(const void*)&(a[i * nk + k]); { int i = row0; int k = (0) + 1; va0 = va0 && ((size_t)(const void*)&(a[i * nk + k]) == p0 + 4); } }
    int vb0 = 1;
    { int j = col0; int k = 0; vb0 = vb0 && ((size_t)(const void*)&(b[k * nj + j]) % 16 == 0); }
    { int j = col0; int k = (0) + 1; vb0 = vb0 && ((size_t)(const void*)&(b[k * nj + j]) % 16 == 0); }
    { int j = col0; int k = 0; const size_t p0 = (size_t)(const void*)&(b[k * nj + j]); { int j = col0 + 1; int k = 0; vb0 = vb0 && ((size_t)(const void*)&(b[k * nj + j]) == p0 + 4); } }
    const int full = row0 + 127 < (ni) && col0 + 127 < (nj) && (nk) > (0) && ((nk) - (0)) % 8 == 0 && va0 && vb0;
    if (full) {
        #pragma unroll
        for (int m = 0; m < 64; ++m) {
            int i = row0 + ty * 4 + m / 8 % 4 + m / 32 * 64;
            int j = col0 + tx * 4 + m % 4 + m % 8 / 4 * 64;
            c[i * nj + j] *= beta;
            acc[m] = c[i * nj + j];
        }
        for (int t = 0; t < nk; t += 8) {
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
                { int i = row0 + pa; int k = t + pb;
                    const float4 v = *(const float4*)&(a[i * nk + k]);
                    ((float*)As[pb + 0])[pa] = v.x;
                    ((float*)As[pb + 1])[pa] = v.y;
                    ((float*)As[pb + 2])[pa] = v.z;
                    ((float*)As[pb + 3])[pa] = v.w;
                }
            }
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) % 32 * 4, pb = (tid + e * 256) / 32;
                { int j = col0 + pa; int k = t + pb;
                    const float4 v = *(const float4*)&(b[k * nj + j]);
                    Bs[pb][pa / 4] = v;
                }
            }
            __syncthreads();
            #pragma unroll
            for (int kk = 0; kk < 8; ++kk) {
                float ra0[8];
                { const float4 v = As[kk][ty]; ra0[0] = v.x; ra0[1] = v.y; ra0[2] = v.z; ra0[3] = v.w; }
                { const float4 v = As[kk][ty + 16]; ra0[4] = v.x; ra0[5] = v.y; ra0[6] = v.z; ra0[7] = v.w; }
                float rb0[8];
                { const float4 v = Bs[kk][tx]; rb0[0] = v.x; rb0[1] = v.y; rb0[2] = v.z; rb0[3] = v.w; }
                { const float4 v = Bs[kk][tx + 16]; rb0[4] = v.x; rb0[5] = v.y; rb0[6] = v.z; rb0[7] = v.w; }
                #pragma unroll
                for (int m = 0; m < 64; ++m)
                    acc[m] += alpha * ra0[m / 8] * rb0[m % 8];
            }
            __syncthreads();
        }
        #pragma unroll
        for (int m = 0; m < 64; ++m) {
            int i = row0 + ty * 4 + m / 8 % 4 + m / 32 * 64;
            int j = col0 + tx * 4 + m % 4 + m % 8 / 4 * 64;
            c[i * nj + j] = acc[m];
        }
    } else {
        int live = 0;
        #pragma unroll
        for (int m = 0; m < 64; ++m) {
            int i = row0 + ty * 4 + m / 8 % 4 + m / 32 * 64;
            int j = col0 + tx * 4 + m % 4 + m % 8 / 4 * 64;
            acc[m] = 0;
            if ((i < ni) && (j < nj)) {
                c[i * nj + j] *= beta;
                acc[m] = c[i * nj + j];
                live = 1;
            }
        }
        if (tid == 0) alive = 0;
        __syncthreads();
        if (live) alive = 1;
        __syncthreads();
        if (!alive) return;
        for (int t = 0; t < nk; t += 8) {
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
                { int i = row0 + pa; int k = t + pb;
                if (va0 && i < ni && k + 3 < nk) {
                    const float4 v = *(const float4*)&(a[i * nk + k]);
                    ((float*)As[pb + 0])[pa] = v.x;
                    ((float*)As[pb + 1])[pa] = v.y;
                    ((float*)As[pb + 2])[pa] = v.z;
                    ((float*)As[pb + 3])[pa] = v.w;
                } else {
                    { int i = row0 + pa; int k = t + pb + 0; ((float*)As[pb + 0])[pa] = (i < ni && k < nk) ? a[i * nk + k] : 0.0f; }
                    { int i = row0 + pa; int k = t + pb + 1; ((float*)As[pb + 1])[pa] = (i < ni && k < nk) ? a[i * nk + k] : 0.0f; }
                    { int i = row0 + pa; int k = t + pb + 2; ((float*)As[pb + 2])[pa] = (i < ni && k < nk) ? a[i * nk + k] : 0.0f; }
                    { int i = row0 + pa; int k = t + pb + 3; ((float*)As[pb + 3])[pa] = (i < ni && k < nk) ? a[i * nk + k] : 0.0f; }
                } }
            }
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) % 32 * 4, pb = (tid + e * 256) / 32;
                { int j = col0 + pa; int k = t + pb;
                if (vb0 && j + 3 < nj && k < nk) {
                    const float4 v = *(const float4*)&(b[k * nj + j]);
                    Bs[pb][pa / 4] = v;
                } else {
                    { int j = col0 + pa + 0; int k = t + pb; ((float*)Bs[pb])[pa + 0] = (j < nj && k < nk) ? b[k * nj + j] : 0.0f; }
                    { int j = col0 + pa + 1; int k = t + pb; ((float*)Bs[pb])[pa + 1] = (j < nj && k < nk) ? b[k * nj + j] : 0.0f; }
                    { int j = col0 + pa + 2; int k = t + pb; ((float*)Bs[pb])[pa + 2] = (j < nj && k < nk) ? b[k * nj + j] : 0.0f; }
                    { int j = col0 + pa + 3; int k = t + pb; ((float*)Bs[pb])[pa + 3] = (j < nj && k < nk) ? b[k * nj + j] : 0.0f; }
                } }
            }
            __syncthreads();
            if (t + 8 <= nk) {
                #pragma unroll
                for (int kk = 0; kk < 8; ++kk) {
                    float ra0[8];
                    { const float4 v = As[kk][ty]; ra0[0] = v.x; ra0[1] = v.y; ra0[2] = v.z; ra0[3] = v.w; }
                    { const float4 v = As[kk][ty + 16]; ra0[4] = v.x; ra0[5] = v.y; ra0[6] = v.z; ra0[7] = v.w; }
                    float rb0[8];
                    { const float4 v = Bs[kk][tx]; rb0[0] = v.x; rb0[1] = v.y; rb0[2] = v.z; rb0[3] = v.w; }
                    { const float4 v = Bs[kk][tx + 16]; rb0[4] = v.x; rb0[5] = v.y; rb0[6] = v.z; rb0[7] = v.w; }
                    #pragma unroll
                    for (int m = 0; m < 64; ++m)
                        acc[m] += alpha * ra0[m / 8] * rb0[m % 8];
                }
            } else {
                for (int kk = 0; kk < nk - t; ++kk) {
                    float ra0[8];
                    { const float4 v = As[kk][ty]; ra0[0] = v.x; ra0[1] = v.y; ra0[2] = v.z; ra0[3] = v.w; }
                    { const float4 v = As[kk][ty + 16]; ra0[4] = v.x; ra0[5] = v.y; ra0[6] = v.z; ra0[7] = v.w; }
                    float rb0[8];
                    { const float4 v = Bs[kk][tx]; rb0[0] = v.x; rb0[1] = v.y; rb0[2] = v.z; rb0[3] = v.w; }
                    { const float4 v = Bs[kk][tx + 16]; rb0[4] = v.x; rb0[5] = v.y; rb0[6] = v.z; rb0[7] = v.w; }
                    #pragma unroll
                    for (int m = 0; m < 64; ++m)
                        acc[m] += alpha * ra0[m / 8] * rb0[m % 8];
                }
            }
            __syncthreads();
        }
        #pragma unroll
        for (int m = 0; m < 64; ++m) {
            int i = row0 + ty * 4 + m / 8 % 4 + m / 32 * 64;
            int j = col0 + tx * 4 + m % 4 + m % 8 / 4 * 64;
            if ((i < ni) && (j < nj)) {
                c[i * nj + j] = acc[m];
            }
        }
    }
}
