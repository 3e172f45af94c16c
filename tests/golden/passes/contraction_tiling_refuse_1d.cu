// RUN: contraction-tiling
// ----- INPUT
__global__ void gemv(const float* a, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = 0.0f;
        for (int k = 0; k < n; k++)
            y[i] += a[i * n + k] * x[k];
    }
}
// ----- EXPECTED
// REFUSED: needs a 2-D thread mapping
