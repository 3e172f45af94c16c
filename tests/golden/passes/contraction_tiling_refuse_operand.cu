// RUN: contraction-tiling
// ----- INPUT
__global__ void weird(const float* a, const float* w, const int* idx, float* c, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) return;
    float s = 0.0f;
    for (int k = 0; k < n; k++)
        s += a[i * n + j] * w[idx[k]];
    c[i * n + j] = s;
}
// ----- EXPECTED
// REFUSED: is not an operand A(row, k) or B(k, col)
