// RUN: vector-elementwise
// ----- INPUT
__global__ void copyd(const double* x, double* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i];
}
// ----- EXPECTED
// REFUSED: no 4-wide vector type for x (double), y (double)
