// RUN: block-reduce-shuffle{warps=8}
// ----- INPUT
#define THREADS 256
__global__ void block_max(const float* in, float* blockmax, int n)
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
        blockmax[blockIdx.x] = s[0];
}
// ----- EXPECTED
// REFUSED: before the tree only declarations and one `s[threadIdx.x] = value;` ma
