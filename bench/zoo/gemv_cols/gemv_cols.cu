// zoo BLAS-2: y = A^T x (row-major A read by columns), one thread per column, accumulating into y in global memory
#include "../zoo.h"

#define NROWS 4096
#define NCOLS 4096

__global__ void gemv_cols(const float* A, const float* x, float* y)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < NCOLS) {
        y[j] = 0.0f;
        for (int i = 0; i < NROWS; i++)
            y[j] += A[i * NCOLS + j] * x[i];
    }
}

int main()
{
    float* hA = zoo_rand((size_t)NROWS * NCOLS, 11);
    float* hx = zoo_rand(NROWS, 12);
    float *dA, *dx, *dy;
    ZOO_CHECK(cudaMalloc(&dA, (size_t)NROWS * NCOLS * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dx, NROWS * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dy, NCOLS * sizeof(float)));
    zoo_upload(dA, hA, (size_t)NROWS * NCOLS);
    zoo_upload(dx, hx, NROWS);
    gemv_cols<<<NCOLS / 128, 128>>>(dA, dx, dy);
    float* hy = zoo_download(dy, NCOLS);
    int bad = 0, checked = 0;
    for (int j = 0; j < NCOLS; j += 89, checked++) {
        double s = 0;
        for (int i = 0; i < NROWS; i++) s += (double)hA[(size_t)i * NCOLS + j] * hx[i];
        bad += !zoo_close(s, hy[j]);
    }
    return zoo_report("gemv_cols", bad, checked, hy, NCOLS);
}
