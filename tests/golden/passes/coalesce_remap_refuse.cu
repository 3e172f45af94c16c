// RUN: coalesce-remap
// ----- INPUT
__global__ void copy2d(const float* A, float* B, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < n && col < n) B[row * n + col] = A[row * n + col];
}
// ----- EXPECTED
// REFUSED: slow index
