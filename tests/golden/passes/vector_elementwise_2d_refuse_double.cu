// RUN: vector-elementwise-2d
// ----- INPUT
__global__ void dger(double* A, const double* x, const double* y, double alpha, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n)
        A[i * n + j] += alpha * x[i] * y[j];
}
// ----- EXPECTED
// REFUSED: no 4-wide vector type for A (double), y (double)
