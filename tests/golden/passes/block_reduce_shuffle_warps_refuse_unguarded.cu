// RUN: block-reduce-shuffle{warps=4}
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
// REFUSED: a block of several warps needs the value guarded as `i < BOUND ? ... :
