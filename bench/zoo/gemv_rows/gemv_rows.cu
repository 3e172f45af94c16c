// zoo BLAS-2: y = A x, row-major A, one thread per row: 4096 threads leave most of a large GPU idle
#include "../zoo.h"

#define N 4096

__global__ void gemv_rows(const float* A, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float sum = 0.0f;
        for (int j = 0; j < n; j++)
            sum += A[i * n + j] * x[j];
        y[i] = sum;
    }
}

int main()
{
    float* hA = zoo_rand((size_t)N * N, 9);
    float* hx = zoo_rand(N, 10);
    float *dA, *dx, *dy;
    ZOO_CHECK(cudaMalloc(&dA, (size_t)N * N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dx, N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dy, N * sizeof(float)));
    zoo_upload(dA, hA, (size_t)N * N);
    zoo_upload(dx, hx, N);
    gemv_rows<<<(N + 255) / 256, 256>>>(dA, dx, dy, N);
    float* hy = zoo_download(dy, N);
    int bad = 0, checked = 0;
    for (int i = 0; i < N; i += 97, checked++) {
        double s = 0;
        for (int j = 0; j < N; j++) s += (double)hA[(size_t)i * N + j] * hx[j];
        bad += !zoo_close(s, hy[i]);
    }
    return zoo_report("gemv_rows", bad, checked, hy, N);
}
