// RUN: register-blocking
// ----- INPUT
__global__ void matmul(float* A, const float* B, float* C, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= n) return;
    float sum = 0.0f;
    for (int k = 0; k < n; ++k)
        sum += A[row * n + k] * B[k * n + col];
    A[row * n + col] = sum;
}
// ----- EXPECTED
// REFUSED: never writes
