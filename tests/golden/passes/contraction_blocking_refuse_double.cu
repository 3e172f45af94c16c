// RUN: contraction-blocking
// ----- INPUT
__global__ void dgemm(const double* a, const double* b, double* c, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < n && col < n) {
        double s = 0.0;
        for (int k = 0; k < n; ++k)
            s += a[row * n + k] * b[k * n + col];
        c[row * n + col] = s;
    }
}
// ----- EXPECTED
// REFUSED: the float4 form needs float operands and a float accumulator (here double/double/double)
