// RUN: vector-elementwise-2d
// ----- INPUT
__global__ void shift(const float* A, float* B, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) {
        int k = (j + 1) % n;
        B[i * n + j] = A[i * n + k];
    }
}
// ----- EXPECTED
// REFUSED: `A[i * n + k]`: its index uses `k`, computed in the element's code
