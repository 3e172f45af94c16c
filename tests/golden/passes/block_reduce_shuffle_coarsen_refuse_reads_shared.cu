// RUN: block-reduce-shuffle{coarsen=4}
// ----- INPUT
#define BLOCK 256
__global__ void sums(const float* x, float* partial, int n)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    buf[t] = i < n ? x[i] : buf[0];
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
// REFUSED: must not read buf
