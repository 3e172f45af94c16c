// RUN: register-blocking
// ----- INPUT
__global__ void matmul(const float* A, const float* B, float* C, int n)
{
    __shared__ float scratch[256];
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= n) return;
    float sum = 0.0f;
    for (int k = 0; k < n; ++k)
        sum += A[row * n + k] * B[k * n + col];
    scratch[threadIdx.x] = sum;
    C[row * n + col] = sum;
}
// ----- EXPECTED
// REFUSED: no shared memory
