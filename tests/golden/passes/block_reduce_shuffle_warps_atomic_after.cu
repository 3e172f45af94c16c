// RUN: block-reduce-shuffle{warps=4}
// ----- INPUT
#define BLOCK 128
__global__ void sums(const float* x, float* partial, float* total, int n)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    buf[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0)
        atomicAdd(total, buf[0]);
}
// ----- EXPECTED
#define BLOCK 128
__global__ void sums(const float* x, float* partial, float* total, int n)
{
    static_assert((BLOCK) >= 32 && (BLOCK) <= 1024 && ((BLOCK) & ((BLOCK) - 1)) == 0, "block-reduce-shuffle: B");
    const int lane = threadIdx.x % 32;
    const int seg = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;  // the original block
    if (seg * (BLOCK) >= (n)) return;  // past the original grid
    float v;
    const int i0 = seg * 128;
    if (i0 + 128 <= (n) && ((reinterpret_cast<unsigned long long>(x + i0)) & 15) == 0) {
        #pragma unroll
        for (int h = 0; h < 1; ++h) {
            const int q = i0 + 4 * (lane + 32 * h);
            const float4 x_w = *reinterpret_cast<const float4*>(x + q);
            v = h == 0 ? (x_w.x + x_w.y) + (x_w.z + x_w.w) : v + ((x_w.x + x_w.y) + (x_w.z + x_w.w));
        }
    } else {
        #pragma unroll
        for (int c = 0; c < (BLOCK) / 32; ++c) {
            const int t_c = lane + 32 * c;
            int i = seg * BLOCK + t_c;
            const float e = i < n ? x[i] : 0.0f;
            v = c == 0 ? e : v + e;
        }
    }
    for (int off = 16; off > 0; off >>= 1)
        v = v + __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0)
        atomicAdd(total, v);
}
