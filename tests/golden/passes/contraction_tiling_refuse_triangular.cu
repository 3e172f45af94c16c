// RUN: contraction-tiling
// ----- INPUT
__global__ void trmm(const float* a, const float* b, float* c, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) {
        float s = 0.0f;
        for (int k = i; k < n; k++)
            s += a[i * n + k] * b[k * n + j];
        c[i * n + j] = s;
    }
}
// ----- EXPECTED
// REFUSED: not a triangular range
