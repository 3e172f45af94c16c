// zoo BLAS-2: y = alpha*A*x + beta*y with column-major A behind a Fortran-style macro, one thread per row
#include "../zoo.h"

#define M 4096
#define NN 4096
#define LDA M
#define A_(i, j) a[(j) * LDA + (i)]

__global__ void gemv_colmajor(int m, int n, float alpha, const float* a, const float* x, float beta, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m)
        return;
    float acc = 0.0f;
    for (int j = 0; j < n; ++j)
        acc += A_(i, j) * x[j];
    y[i] = alpha * acc + beta * y[i];
}

int main()
{
    float* ha = zoo_rand((size_t)M * NN, 13);
    float* hx = zoo_rand(NN, 14);
    float* hy = zoo_rand(M, 15);
    float *da, *dx, *dy;
    ZOO_CHECK(cudaMalloc(&da, (size_t)M * NN * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dx, NN * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dy, M * sizeof(float)));
    zoo_upload(da, ha, (size_t)M * NN);
    zoo_upload(dx, hx, NN);
    zoo_upload(dy, hy, M);
    gemv_colmajor<<<(M + 127) / 128, 128>>>(M, NN, 0.75f, da, dx, 0.25f, dy);
    float* out = zoo_download(dy, M);
    int bad = 0, checked = 0;
    for (int i = 0; i < M; i += 101, checked++) {
        double s = 0;
        for (int j = 0; j < NN; j++) s += (double)ha[(size_t)j * LDA + i] * hx[j];
        bad += !zoo_close(0.75 * s + 0.25 * hy[i], out[i]);
    }
    return zoo_report("gemv_colmajor", bad, checked, out, M);
}
