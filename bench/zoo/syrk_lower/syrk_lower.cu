// zoo BLAS-3: lower triangle of C = A^T A (column k of A is a[k*N + i]), 1-D grid over rows x cols, local accumulator
#include "../zoo.h"

#define N 2048
#define K 2048

__global__ void syrk_lower(const float* __restrict__ a, float* __restrict__ c)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int i = idx / N;
    int j = idx % N;
    if (i >= N || j > i)
        return;
    float s = 0.0f;
    for (int k = 0; k < K; k++)
        s += a[k * N + i] * a[k * N + j];
    c[i * N + j] = s;
}

int main()
{
    float* ha = zoo_rand((size_t)K * N, 31);
    float *da, *dc;
    ZOO_CHECK(cudaMalloc(&da, (size_t)K * N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dc, (size_t)N * N * sizeof(float)));
    zoo_upload(da, ha, (size_t)K * N);
    ZOO_CHECK(cudaMemset(dc, 0, (size_t)N * N * sizeof(float)));
    syrk_lower<<<(N * N + 255) / 256, 256>>>(da, dc);
    float* out = zoo_download(dc, (size_t)N * N);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < (size_t)N * N; e += 40009) {
        size_t i = e / N, j = e % N;
        if (j > i) continue;
        double s = 0;
        for (int k = 0; k < K; k++) s += (double)ha[(size_t)k * N + i] * ha[(size_t)k * N + j];
        bad += !zoo_close(s, out[e]);
        checked++;
    }
    return zoo_report("syrk_lower", bad, checked, out, (size_t)N * N);
}
