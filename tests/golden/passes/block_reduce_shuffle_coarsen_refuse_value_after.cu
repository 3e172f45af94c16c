// RUN: block-reduce-shuffle{coarsen=4}
// ----- INPUT
#define BLOCK 256
__global__ void sums(const float* x, float* partial, float* first, int n)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    float mine = i < n ? x[i] : 0.0f;
    buf[t] = mine;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) {
        partial[blockIdx.x] = buf[0];
        first[blockIdx.x] = mine;
    }
}
// ----- EXPECTED
// REFUSED: a value computed before the tree is used after it
