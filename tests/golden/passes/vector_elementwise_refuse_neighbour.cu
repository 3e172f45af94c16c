// RUN: vector-elementwise
// ----- INPUT
__global__ void diff(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 1)
        y[i] = x[i + 1] - x[i];
}
// ----- EXPECTED
// REFUSED: `x[i + 1]` is not x[i]
