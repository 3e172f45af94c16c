// RUN: block-reduce-shuffle{coarsen=2}
// ----- INPUT
#define B 128
__global__ void block_max(const float* v, float* out, int n)
{
    __shared__ float m[B];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    m[threadIdx.x] = i < n ? v[i] : -1e30f;
    __syncthreads();
    for (unsigned s = B / 2; s > 0; s >>= 1) {
        if (tid < s)
            m[tid] = fmaxf(m[tid], m[tid + s]);
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = m[0];
}
// ----- EXPECTED
#define B 128
__global__ void block_max(const float* v, float* out, int n)
{
    __shared__ float m[B];
    unsigned tid = threadIdx.x;
    float acc;
    #pragma unroll
    for (int c = 0; c < 2; ++c) {
        const int tid_c = tid + c * ((B) / 2);
        unsigned i = blockIdx.x * (B) + tid_c;
        const float e = i < n ? v[i] : -1e30f;
        acc = c == 0 ? e : fmaxf(acc, e);
    }
    {
        static_assert(((B) / 2) >= 32 && ((B) / 2) <= 1024 && (((B) / 2) & (((B) / 2) - 1)) == 0, "block-reduce-shuffle: B");
        __shared__ float m_w[32];
        float v1 = acc;
        for (int off = 16; off > 0; off >>= 1)
            v1 = fmaxf(v1, __shfl_down_sync(0xffffffffu, v1, off));
        if (tid % 32 == 0) m_w[tid / 32] = v1;
        __syncthreads();
        if (tid < 32) {
            v1 = m_w[tid % (((B) / 2) / 32)];
            for (int off = ((B) / 2) / 64; off > 0; off >>= 1)
                v1 = fmaxf(v1, __shfl_down_sync(0xffffffffu, v1, off));
            if (tid == 0) m[0] = v1;
        }
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = m[0];
}
