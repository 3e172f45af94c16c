// RUN: vector-elementwise
// ----- INPUT
#define INCX 2
#define X(i) x[(i) * INCX]

__global__ void gather(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = X(i);
}
// ----- EXPECTED
// REFUSED: `X(i)` is not x[i]
