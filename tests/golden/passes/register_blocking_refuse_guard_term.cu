// RUN: register-blocking{tile=32}
// ----- INPUT
__global__ void matmul(const float* A, const float* B, float* C, int n, int rows)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= n || row >= rows) return;
    float sum = 0.0f;
    for (int k = 0; k < n; ++k)
        sum += A[row * n + k] * B[k * n + col];
    C[row * n + col] = sum;
}
// ----- EXPECTED
// REFUSED: the guard must bound exactly
