// RUN: contraction-blocking
// ----- INPUT
#define M 512
#define K 300
#define NJ 200
#define AT(k, i) A[(k) * M + (i)]
#define BB(k, j) B[(k) * NJ + (j)]

__global__ void gemm_tn(const float* A, const float* B, float* C)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M && j < NJ) {
        float s = 0.0f;
        for (int k = 0; k < K; k++)
            s += AT(k, i) * BB(k, j);
        C[i * NJ + j] = s;
    }
}
// ----- EXPECTED
#define M 512
#define K 300
#define NJ 200
#define AT(k, i) A[(k) * M + (i)]
#define BB(k, j) B[(k) * NJ + (j)]

__global__ void __launch_bounds__(256, 2) gemm_tn(const float* A, const float* B, float* C)
{
    __shared__ float4 As[8][33];
    __shared__ float4 Bs[8][33];
    __shared__ int alive;
    float acc[64];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const int row0 = blockIdx.y * 128, col0 = blockIdx.x * 128;
    int va0 = 1;
    { int i = row0; int k = 0; va0 = va0 && ((size_t)(const void*)&(AT(k, i)) % 16 == 0); }
    { int i = row0; int k = (0) + 1; va0 = va0 && ((size_t)(const void*)&(AT(k, i)) % 16 == 0); }
    { int i = row0; int k = 0; const size_t p0 = (size_t)(const void*)&(AT(k, i)); { int i = row0 + 1; int k = 0; va0 = va0 && ((size_t)(const void*)&(AT(k, i)) == p0 + 4); } }
    int vb0 = 1;
    { int j = col0; int k = 0; vb0 = vb0 && ((size_t)(const void*)&(BB(k, j)) % 16 == 0); }
    { int j = col0; int k = (0) + 1; vb0 = vb0 && ((size_t)(const void*)&(BB(k, j)) % 16 == 0); }
    { int j = col0; int k = 0; const size_t p0 = (size_t)(const void*)&(BB(k, j)); { int j = col0 + 1; int k = 0; vb0 = vb0 && ((size_t)(const void*)&(BB(k, j)) == p0 + 4); } }
    const int full = row0 + 127 < (M) && col0 + 127 < (NJ) && (K) > (0) && ((K) - (0)) % 8 == 0 && va0 && vb0;
    if (full) {
        #pragma unroll
        for (int m = 0; m < 64; ++m) {
            int i = row0 + ty * 4 + m / 8 % 4 + m / 32 * 64;
            int j = col0 + tx * 4 + m % 4 + m % 8 / 4 * 64;
            float s = 0.0f;
            acc[m] = s;
        }
        for (int t = 0; t < K; t += 8) {
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) % 32 * 4, pb = (tid + e * 256) / 32;
                { int i = row0 + pa; int k = t + pb;
                    const float4 v = *(const float4*)&(AT(k, i));
                    As[pb][pa / 4] = v;
                }
            }
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) % 32 * 4, pb = (tid + e * 256) / 32;
                { int j = col0 + pa; int k = t + pb;
                    const float4 v = *(const float4*)&(BB(k, j));
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
                    acc[m] += ra0[m / 8] * rb0[m % 8];
            }
            __syncthreads();
        }
        #pragma unroll
        for (int m = 0; m < 64; ++m) {
            int i = row0 + ty * 4 + m / 8 % 4 + m / 32 * 64;
            int j = col0 + tx * 4 + m % 4 + m % 8 / 4 * 64;
            float s = acc[m];
            C[i * NJ + j] = s;
        }
    } else {
        int live = 0;
        #pragma unroll
        for (int m = 0; m < 64; ++m) {
            int i = row0 + ty * 4 + m / 8 % 4 + m / 32 * 64;
            int j = col0 + tx * 4 + m % 4 + m % 8 / 4 * 64;
            acc[m] = 0;
            if (i < M && j < NJ) {
                float s = 0.0f;
                acc[m] = s;
                live = 1;
            }
        }
        if (tid == 0) alive = 0;
        __syncthreads();
        if (live) alive = 1;
        __syncthreads();
        if (!alive) return;
        for (int t = 0; t < K; t += 8) {
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) % 32 * 4, pb = (tid + e * 256) / 32;
                { int i = row0 + pa; int k = t + pb;
                if (va0 && i + 3 < M && k < K) {
                    const float4 v = *(const float4*)&(AT(k, i));
                    As[pb][pa / 4] = v;
                } else {
                    { int i = row0 + pa + 0; int k = t + pb; ((float*)As[pb])[pa + 0] = (i < M && k < K) ? AT(k, i) : 0.0f; }
                    { int i = row0 + pa + 1; int k = t + pb; ((float*)As[pb])[pa + 1] = (i < M && k < K) ? AT(k, i) : 0.0f; }
                    { int i = row0 + pa + 2; int k = t + pb; ((float*)As[pb])[pa + 2] = (i < M && k < K) ? AT(k, i) : 0.0f; }
                    { int i = row0 + pa + 3; int k = t + pb; ((float*)As[pb])[pa + 3] = (i < M && k < K) ? AT(k, i) : 0.0f; }
                } }
            }
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) % 32 * 4, pb = (tid + e * 256) / 32;
                { int j = col0 + pa; int k = t + pb;
                if (vb0 && j + 3 < NJ && k < K) {
                    const float4 v = *(const float4*)&(BB(k, j));
                    Bs[pb][pa / 4] = v;
                } else {
                    { int j = col0 + pa + 0; int k = t + pb; ((float*)Bs[pb])[pa + 0] = (j < NJ && k < K) ? BB(k, j) : 0.0f; }
                    { int j = col0 + pa + 1; int k = t + pb; ((float*)Bs[pb])[pa + 1] = (j < NJ && k < K) ? BB(k, j) : 0.0f; }
                    { int j = col0 + pa + 2; int k = t + pb; ((float*)Bs[pb])[pa + 2] = (j < NJ && k < K) ? BB(k, j) : 0.0f; }
                    { int j = col0 + pa + 3; int k = t + pb; ((float*)Bs[pb])[pa + 3] = (j < NJ && k < K) ? BB(k, j) : 0.0f; }
                } }
            }
            __syncthreads();
            if (t + 8 <= K) {
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
                        acc[m] += ra0[m / 8] * rb0[m % 8];
                }
            } else {
                for (int kk = 0; kk < K - t; ++kk) {
                    float ra0[8];
                    { const float4 v = As[kk][ty]; ra0[0] = v.x; ra0[1] = v.y; ra0[2] = v.z; ra0[3] = v.w; }
                    { const float4 v = As[kk][ty + 16]; ra0[4] = v.x; ra0[5] = v.y; ra0[6] = v.z; ra0[7] = v.w; }
                    float rb0[8];
                    { const float4 v = Bs[kk][tx]; rb0[0] = v.x; rb0[1] = v.y; rb0[2] = v.z; rb0[3] = v.w; }
                    { const float4 v = Bs[kk][tx + 16]; rb0[4] = v.x; rb0[5] = v.y; rb0[6] = v.z; rb0[7] = v.w; }
                    #pragma unroll
                    for (int m = 0; m < 64; ++m)
                        acc[m] += ra0[m / 8] * rb0[m % 8];
                }
            }
            __syncthreads();
        }
        #pragma unroll
        for (int m = 0; m < 64; ++m) {
            int i = row0 + ty * 4 + m / 8 % 4 + m / 32 * 64;
            int j = col0 + tx * 4 + m % 4 + m % 8 / 4 * 64;
            if (i < M && j < NJ) {
                float s = acc[m];
                C[i * NJ + j] = s;
            }
        }
    }
}
