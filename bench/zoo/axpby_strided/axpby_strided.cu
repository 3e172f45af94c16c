// zoo BLAS-1: y = alpha*x + beta*y through an indexing macro with an increment, grid-stride loop, fixed grid
#include "../zoo.h"

#define N (1 << 26)
#define INCX 1
#define X(i) x[(i) * INCX]
#define Y(i) y[(i) * INCX]

__global__ void axpby_strided(const float* x, float* y, float alpha, float beta, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        Y(i) = alpha * X(i) + beta * Y(i);
}

int main()
{
    float* hx = zoo_rand(N, 7);
    float* hy = zoo_rand(N, 8);
    float *dx, *dy;
    ZOO_CHECK(cudaMalloc(&dx, (size_t)N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dy, (size_t)N * sizeof(float)));
    zoo_upload(dx, hx, N);
    zoo_upload(dy, hy, N);
    axpby_strided<<<528, 128>>>(dx, dy, 1.5f, -0.5f, N);
    float* out = zoo_download(dy, N);
    int bad = 0, checked = 0;
    for (int i = 0; i < N; i += 4099, checked++) bad += !zoo_close(1.5 * hx[i] - 0.5 * hy[i], out[i]);
    return zoo_report("axpby_strided", bad, checked, out, N);
}
