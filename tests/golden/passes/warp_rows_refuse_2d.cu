// RUN: warp-rows
// ----- INPUT
__global__ void add2d(const float* A, float* B, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    for (int k = 0; k < n; ++k) B[i * n + j] += A[k];
}
// ----- EXPECTED
// REFUSED: 1-D thread mapping
