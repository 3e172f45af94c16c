// RUN: contraction-blocking
// ----- INPUT
__global__ void gemv(const float* a, const float* x, float* y, int m, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) {
        float s = 0.0f;
        for (int j = 0; j < n; ++j)
            s += a[i * n + j] * x[j];
        y[i] = s;
    }
}
// ----- EXPECTED
// REFUSED: needs a 2-D thread mapping (col from x, row from y)
