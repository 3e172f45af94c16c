// zoo BLAS-1: dot product, grid-stride loop, per-thread partial sum, one atomicAdd per thread into global memory
#include "../zoo.h"

#define N (1 << 24)

__global__ void dot_atomic(const float* x, const float* y, float* result, int n)
{
    float part = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        part += x[i] * y[i];
    atomicAdd(result, part);
}

int main()
{
    float* hx = zoo_rand(N, 1);
    float* hy = zoo_rand(N, 2);
    float *dx, *dy, *dr;
    ZOO_CHECK(cudaMalloc(&dx, (size_t)N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dy, (size_t)N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dr, sizeof(float)));
    zoo_upload(dx, hx, N);
    zoo_upload(dy, hy, N);
    ZOO_CHECK(cudaMemset(dr, 0, sizeof(float)));
    dot_atomic<<<1024, 256>>>(dx, dy, dr, N);
    float* hr = zoo_download(dr, 1);
    double want = 0.0;
    for (int i = 0; i < N; i++) want += (double)hx[i] * hy[i];
    return zoo_report("dot_atomic", !zoo_close(want, hr[0], 1e-2), 1, hr, 1);
}
