// RUN: smem-transpose
// ----- INPUT
__global__ void copy2d(const float* A, float* B, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) B[i * n + j] = A[i * n + j];
}
// ----- EXPECTED
// REFUSED: nothing to transpose
