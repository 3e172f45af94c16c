// zoo BLAS-1: y = a*x + y, one element per thread, explicit index arithmetic
#include "../zoo.h"

#define N (1 << 26)

__global__ void axpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

int main()
{
    float* hx = zoo_rand(N, 5);
    float* hy = zoo_rand(N, 6);
    float *dx, *dy;
    ZOO_CHECK(cudaMalloc(&dx, (size_t)N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dy, (size_t)N * sizeof(float)));
    zoo_upload(dx, hx, N);
    zoo_upload(dy, hy, N);
    axpy<<<(N + 255) / 256, 256>>>(N, 2.5f, dx, dy);
    float* out = zoo_download(dy, N);
    int bad = 0, checked = 0;
    for (int i = 0; i < N; i += 4099, checked++) bad += !zoo_close(2.5 * hx[i] + hy[i], out[i]);
    return zoo_report("axpy", bad, checked, out, N);
}
