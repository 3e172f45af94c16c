// RUN: block-reduce-shuffle
// ----- INPUT
__global__ void tree_partials(const float* x, float* partial, float* pairs)
{
    __shared__ float p[256];
    int t = threadIdx.x;
    p[t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    for (int s = 256 / 2; s > 0; s >>= 1) {
        if (t < s)
            p[t] += p[t + s];
        __syncthreads();
    }
    if (t == 0)
        partial[blockIdx.x] = p[0];
    pairs[blockIdx.x * 256 + t] = p[t];
}
// ----- EXPECTED
// REFUSED: only p[0] may be read
