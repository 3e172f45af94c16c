// RUN: delinearize-2d,register-accumulation
// ----- INPUT
// C += A B into global memory, one thread per output of a flat row-major index
__global__ void gemm_acc(const float* a, const float* b, float* c, int m, int n, int p)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int i = t / n;
    int j = t % n;
    if (t < m * n) {
        for (int k = 0; k < p; k++)
            c[i * n + j] += a[i * p + k] * b[k * n + j];
    }
}
// ----- EXPECTED
// C += A B into global memory, one thread per output of a flat row-major index
__global__ void gemm_acc(const float* a, const float* b, float* c, int m, int n, int p)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < m && j < n) {
        float acc = c[i * n + j];
        for (int k = 0; k < p; k++)
            acc += a[i * p + k] * b[k * n + j];
        c[i * n + j] = acc;
    }
}
