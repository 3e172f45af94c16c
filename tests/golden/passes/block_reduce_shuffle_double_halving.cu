// RUN: block-reduce-shuffle
// ----- INPUT
__global__ void block_sum_d(const double* x, double* partial, int n)
{
    __shared__ double acc[128];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * 128 + tid;
    acc[tid] = i < n ? x[i] : 0.0;
    __syncthreads();
    for (unsigned s = 128 >> 1; s > 0; s /= 2) {
        if (tid < s) {
            acc[tid] = acc[tid + s] + acc[tid];
        }
        __syncthreads();
    }
    if (tid == 0)
        partial[blockIdx.x] = acc[0];
}
// ----- EXPECTED
__global__ void block_sum_d(const double* x, double* partial, int n)
{
    __shared__ double acc[128];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * 128 + tid;
    acc[tid] = i < n ? x[i] : 0.0;
    __syncthreads();
    {
        static_assert((128) >= 32 && (128) <= 1024 && ((128) & ((128) - 1)) == 0, "block-reduce-shuffle: B");
        __shared__ double acc_w[32];
        double v = acc[tid < (128) ? tid : 0];
        for (int off = 16; off > 0; off >>= 1)
            v = v + __shfl_down_sync(0xffffffffu, v, off);
        if (tid % 32 == 0) acc_w[tid / 32] = v;
        __syncthreads();
        if (tid < 32) {
            v = acc_w[tid % ((128) / 32)];
            for (int off = (128) / 64; off > 0; off >>= 1)
                v = v + __shfl_down_sync(0xffffffffu, v, off);
            if (tid == 0) acc[0] = v;
        }
        __syncthreads();
    }
    if (tid == 0)
        partial[blockIdx.x] = acc[0];
}
