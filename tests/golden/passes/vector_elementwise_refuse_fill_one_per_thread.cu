// RUN: vector-elementwise{fill=1}
// ----- INPUT
__global__ void copy(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i];
}
// ----- EXPECTED
// REFUSED: fill: only a grid-stride loop covers any grid
