// RUN: block-reduce-shuffle{warps=2}
// ----- INPUT
#define B 64
__global__ void block_min(const int* v, int* out, int n)
{
    __shared__ int m[B];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    m[threadIdx.x] = i < n ? v[i] : 2147483647;
    __syncthreads();
    for (unsigned s = 1; s < B; s *= 2) {
        if (threadIdx.x % (2 * s) == 0)
            m[threadIdx.x] = min(m[threadIdx.x], m[threadIdx.x + s]);
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = m[0];
}
// ----- EXPECTED
#define B 64
__global__ void block_min(const int* v, int* out, int n)
{
    static_assert((B) >= 32 && (B) <= 1024 && ((B) & ((B) - 1)) == 0, "block-reduce-shuffle: B");
    const int lane = threadIdx.x % 32;
    const int seg = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;  // the original block
    if (seg * (B) >= (n)) return;  // past the original grid
    int v1;
    #pragma unroll
    for (int c = 0; c < (B) / 32; ++c) {
        const int t_c = lane + 32 * c;
        unsigned i = seg * (B) + t_c;
        const int e = i < n ? v[i] : 2147483647;
        v1 = c == 0 ? e : min(v1, e);
    }
    for (int off = 16; off > 0; off >>= 1)
        v1 = min(v1, __shfl_xor_sync(0xffffffffu, v1, off));
    if (lane == 0)
        out[seg] = v1;
}
