// RUN: block-reduce-shuffle
// ----- INPUT
__global__ void block_sum_d(const double* x, double* partial, int n)
{
    __shared__ double acc[1024];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    acc[tid] = i < n ? x[i] : 0.0;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (tid < s) {
            acc[tid] = acc[tid] + acc[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0)
        partial[blockIdx.x] = acc[0];
}
// ----- EXPECTED
// REFUSED: must be a compile-time constant
