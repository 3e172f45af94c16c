// RUN: block-reduce-shuffle{coarsen=4}
// ----- INPUT
#define BLOCK 64
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
}
// ----- EXPECTED
// REFUSED: a power of two from 32 to 1024
