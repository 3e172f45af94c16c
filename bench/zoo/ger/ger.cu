// zoo BLAS-2: rank-1 update A += alpha * x y^T, 2-D grid, one thread per element
#include "../zoo.h"

#define N 8192

__global__ void ger(float* A, const float* x, const float* y, float alpha, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n)
        A[i * n + j] += alpha * x[i] * y[j];
}

int main()
{
    float* hA = zoo_rand((size_t)N * N, 16);
    float* hx = zoo_rand(N, 17);
    float* hy = zoo_rand(N, 18);
    float *dA, *dx, *dy;
    ZOO_CHECK(cudaMalloc(&dA, (size_t)N * N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dx, N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dy, N * sizeof(float)));
    zoo_upload(dA, hA, (size_t)N * N);
    zoo_upload(dx, hx, N);
    zoo_upload(dy, hy, N);
    dim3 block(32, 8);
    dim3 grid(N / 32, N / 8);
    ger<<<grid, block>>>(dA, dx, dy, 0.5f, N);
    float* out = zoo_download(dA, (size_t)N * N);
    int bad = 0, checked = 0;
    for (size_t k = 0; k < (size_t)N * N; k += 100003, checked++)
        bad += !zoo_close(hA[k] + 0.5 * hx[k / N] * hy[k % N], out[k]);
    return zoo_report("ger", bad, checked, out, (size_t)N * N);
}
