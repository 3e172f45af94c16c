// RUN: delinearize-2d
// ----- INPUT
// column-major C = A B through BLAS-style macros; consecutive threads walk a column (i = t % m)
#define IDX2C(i, j, ld) ((j) * (ld) + (i))

__global__ void gemm_cm(const float* A, const float* B, float* C, int m, int n, int k)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int i = t % m;
    int j = t / m;
    if (j >= n)
        return;
    float s = 0.0f;
    for (int p = 0; p < k; p++)
        s += A[IDX2C(i, p, m)] * B[IDX2C(p, j, k)];
    C[IDX2C(i, j, m)] = s;
}
// ----- EXPECTED
// column-major C = A B through BLAS-style macros; consecutive threads walk a column (i = t % m)
#define IDX2C(i, j, ld) ((j) * (ld) + (i))

__global__ void gemm_cm(const float* A, const float* B, float* C, int m, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (j >= n || i >= m)
        return;
    float s = 0.0f;
    for (int p = 0; p < k; p++)
        s += A[IDX2C(i, p, m)] * B[IDX2C(p, j, k)];
    C[IDX2C(i, j, m)] = s;
}
