// RUN: grid-stride-fill
// ----- INPUT
__global__ void partials(const float* x, float* partial, int n)
{
    __shared__ float acc;
    if (threadIdx.x == 0) acc = 0.0f;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&acc, x[i]);
    __syncthreads();
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}
// ----- EXPECTED
// REFUSED: the block-level code depends on which block runs it or on how many there are
