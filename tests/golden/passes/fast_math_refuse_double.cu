// RUN: fast-math
// ----- INPUT
__global__ void norms(const double* x, double* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.0 / sqrt(x[i]) + exp(x[i]);
}
// ----- EXPECTED
// REFUSED: no x / sqrtf(y), expf
