// RUN: block-reduce-shuffle{warps=8}
// ----- INPUT
#define BLOCK 128
__global__ void sums(const float* x, float* partial, int n)
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
        partial[blockIdx.x] = buf[0];
    __syncthreads();
}
// ----- EXPECTED
// REFUSED: one warp a block needs the tree's array the kernel's only shared memor
