// RUN: grid-stride-fill
// ----- INPUT
__global__ void block_then_atomic(const float* x, float* total, int n)
{
    __shared__ float part[256];
    part[threadIdx.x] = 0.0f;
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n)
        part[threadIdx.x] = x[i] * x[i];
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (int t = 0; t < blockDim.x; ++t)
            s += part[t];
        atomicAdd(total, s);
    }
}
// ----- EXPECTED
// REFUSED: `part[threadIdx.x]` is written in the element's code and outlives it (the one element per thread that the block-level code reads would become the thread's last; atomics are fine)
