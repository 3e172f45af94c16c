// RUN: thread-coarsen{axis=x factor=4}
// ----- INPUT
__global__ void fill(float* y, float v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += blockDim.x * gridDim.x) y[i] = v;
}
// ----- EXPECTED
// REFUSED: beyond the index
