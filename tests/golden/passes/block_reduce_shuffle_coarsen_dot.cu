// RUN: block-reduce-shuffle{coarsen=4}
// ----- INPUT
#define N (1 << 24)
#define BLOCK 256
__global__ void dot_blocks(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ partial)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    buf[t] = i < N ? x[i] * y[i] : 0.0f;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0)
        partial[blockIdx.x] = buf[0];
}
// ----- EXPECTED
#define N (1 << 24)
#define BLOCK 256
__global__ void dot_blocks(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ partial)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    float acc;
    #pragma unroll
    for (int c = 0; c < 4; ++c) {
        const int t_c = t + c * ((BLOCK) / 4);
        int i = blockIdx.x * BLOCK + t_c;
        const float e = i < N ? x[i] * y[i] : 0.0f;
        acc = c == 0 ? e : acc + e;
    }
    {
        static_assert(((BLOCK) / 4) >= 32 && ((BLOCK) / 4) <= 1024 && (((BLOCK) / 4) & (((BLOCK) / 4) - 1)) == 0, "block-reduce-shuffle: B");
        __shared__ float buf_w[32];
        float v = acc;
        for (int off = 16; off > 0; off >>= 1)
            v = v + __shfl_down_sync(0xffffffffu, v, off);
        if (t % 32 == 0) buf_w[t / 32] = v;
        __syncthreads();
        if (t < 32) {
            v = buf_w[t % (((BLOCK) / 4) / 32)];
            for (int off = ((BLOCK) / 4) / 64; off > 0; off >>= 1)
                v = v + __shfl_down_sync(0xffffffffu, v, off);
            if (t == 0) buf[0] = v;
        }
        __syncthreads();
    }
    if (t == 0)
        partial[blockIdx.x] = buf[0];
}
