// RUN: block-reduce-shuffle{warps=1}
// ----- INPUT
#define BLOCK 128
__global__ void sums(const float* x, float* partial)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    buf[t] = x[blockIdx.x * BLOCK + t];
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
#define BLOCK 128
__global__ void sums(const float* x, float* partial)
{
    static_assert((BLOCK) >= 32 && (BLOCK) <= 1024 && ((BLOCK) & ((BLOCK) - 1)) == 0, "block-reduce-shuffle: B");
    const int lane = threadIdx.x % 32;
    const int seg = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;  // the original block
    float v;
    #pragma unroll
    for (int c = 0; c < (BLOCK) / 32; ++c) {
        const int t_c = lane + 32 * c;
        const float e = x[seg * BLOCK + t_c];
        v = c == 0 ? e : v + e;
    }
    for (int off = 16; off > 0; off >>= 1)
        v = v + __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0)
        partial[seg] = v;
}
