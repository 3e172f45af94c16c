// RUN: block-reduce-shuffle
// ----- INPUT
__global__ void block_sum(const float* x, float* partial, int nblocks)
{
    __shared__ float p[256];
    int t = threadIdx.x;
    if (blockIdx.x >= nblocks)
        return;
    p[t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    for (int s = 256 / 2; s > 0; s >>= 1) {
        if (t < s)
            p[t] += p[t + s];
        __syncthreads();
    }
    if (t == 0)
        partial[blockIdx.x] = p[0];
}
// ----- EXPECTED
// REFUSED: a return before the tree
