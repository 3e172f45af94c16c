// RUN: vector-elementwise-2d
// ----- INPUT
__global__ void evens(const float* A, float* B, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n / 2)
        B[i * n + j] = A[i * n + 2 * j];
}
// ----- EXPECTED
// REFUSED: `A[i * n + 2 * j]` neither steps by one element with j nor is free of it
