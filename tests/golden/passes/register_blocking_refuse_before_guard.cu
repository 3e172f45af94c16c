// RUN: register-blocking
// ----- INPUT
__global__ void matmul(const float* A, const float* B, float* C, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int lda = n;
    if (row >= n || col >= n) return;
    float sum = 0.0f;
    for (int k = 0; k < n; ++k)
        sum += A[row * lda + k] * B[k * n + col];
    C[row * n + col] = sum;
}
// ----- EXPECTED
// REFUSED: only the global-index declarations
