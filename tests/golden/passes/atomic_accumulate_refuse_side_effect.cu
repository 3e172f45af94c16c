// RUN: atomic-accumulate
// ----- INPUT
__global__ void sum_consume(float* in, float* total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(total, in[i] = 0.0f);
}
// ----- EXPECTED
// REFUSED: the added value has side effects or calls a function
