// RUN: precision-hygiene
// ----- INPUT
__global__ void scale(double* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = sqrt(x[i]) * 0.5;
}
// ----- EXPECTED
// REFUSED: float
