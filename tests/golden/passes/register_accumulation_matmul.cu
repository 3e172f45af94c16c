// RUN: register-accumulation
// KERNEL: matmul_naive
// ----- INPUT
__global__ void matmul_naive(const float* A, const float* B, float* C, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) return;

    C[i * n + j] = 0.0f;
    for (int k = 0; k < n; ++k) {
        C[i * n + j] = C[i * n + j] + A[i * n + k] * B[k * n + j];
    }
}
// ----- EXPECTED
__global__ void matmul_naive(const float* A, const float* B, float* C, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) return;

    float acc = 0.0f;
    for (int k = 0; k < n; ++k) {
        acc += A[i * n + k] * B[k * n + j];
    }
    C[i * n + j] = acc;
}
