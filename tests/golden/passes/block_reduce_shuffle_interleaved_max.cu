// RUN: block-reduce-shuffle
// ----- INPUT
#define THREADS 512
__global__ void block_max(const float* in, float* out, int n)
{
    __shared__ float s[THREADS];
    float m = -3.0e38f;
    for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += THREADS * gridDim.x)
        m = fmaxf(m, in[i]);
    s[threadIdx.x] = m;
    __syncthreads();
    for (unsigned int stride = 1; stride < THREADS; stride *= 2) {
        if (threadIdx.x % (2 * stride) == 0)
            s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + stride]);
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = s[0];
}
// ----- EXPECTED
#define THREADS 512
__global__ void block_max(const float* in, float* out, int n)
{
    __shared__ float s[THREADS];
    float m = -3.0e38f;
    for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += THREADS * gridDim.x)
        m = fmaxf(m, in[i]);
    s[threadIdx.x] = m;
    __syncthreads();
    {
        static_assert((THREADS) >= 32 && (THREADS) <= 1024 && ((THREADS) & ((THREADS) - 1)) == 0, "block-reduce-shuffle: B");
        __shared__ float s_w[32];
        float v = s[threadIdx.x < (THREADS) ? threadIdx.x : 0];
        for (int off = 16; off > 0; off >>= 1)
            v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, off));
        if (threadIdx.x % 32 == 0) s_w[threadIdx.x / 32] = v;
        __syncthreads();
        if (threadIdx.x < 32) {
            v = s_w[threadIdx.x % ((THREADS) / 32)];
            for (int off = (THREADS) / 64; off > 0; off >>= 1)
                v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, off));
            if (threadIdx.x == 0) s[0] = v;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = s[0];
}
