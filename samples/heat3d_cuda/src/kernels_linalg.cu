/*
 * kernels_linalg.cu - dense linear-algebra kernels of the heat3d mini-app.
 *
 * These are straightforward reference implementations: one thread per
 * output element / row / column, no shared-memory tiling.
 */
#include "kernels.cuh"

namespace linalg {

/* C = A * B for n x n row-major matrices.
 * One thread computes C[i][j]; the sum is accumulated directly in C. */
__global__ void matmul_naive(const float* A, const float* B, float* C, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;   /* column */
    int i = blockIdx.y * blockDim.y + threadIdx.y;   /* row    */
    if (i >= n || j >= n) return;

    C[i * n + j] = 0.0f;
    for (int k = 0; k < n; ++k) {
        C[i * n + j] += A[i * n + k] * B[k * n + j];
    }
}

/* y = A * x; thread i walks row i of A. */
__global__ void matvec_rows(const float* A, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;

    float sum = 0.0f;
    for (int k = 0; k < n; ++k) {
        sum += A[i * n + k] * x[k];
    }
    y[i] = sum;
}

/* At[j][i] = A[i][j]; reads along rows, writes along columns. */
__global__ void transpose_naive(const float* A, float* At, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) {
        At[j * n + i] = A[i * n + j];
    }
}

/* Column sums of A, where A is stored column-major: element (i, j) lives at
 * Acm[j * n + i].  Thread j walks down column j, so at every iteration
 * neighbouring threads touch addresses n floats apart. */
__global__ void colsum_strided(const float* Acm, float* colsum, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;

    float sum = 0.0f;
    for (int i = 0; i < n; ++i) {
        sum += Acm[j * n + i];
    }
    colsum[j] = sum;
}

} // namespace linalg
