// zoo BLAS-3: symmetric rank-k update C = alpha A A^T + beta C (a[i*M+k] * a[j*M+k]), accumulating in global memory
#include "../zoo.h"

#define N 2048
#define M 2048

__global__ void syrk(float alpha, float beta, const float* a, float* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < N && j < N) {
        c[i * N + j] *= beta;
        for (int k = 0; k < M; k++)
            c[i * N + j] += alpha * a[i * M + k] * a[j * M + k];
    }
}

int main()
{
    float* ha = zoo_rand((size_t)N * M, 29);
    float* hc = zoo_rand((size_t)N * N, 30);
    float *da, *dc;
    ZOO_CHECK(cudaMalloc(&da, (size_t)N * M * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dc, (size_t)N * N * sizeof(float)));
    zoo_upload(da, ha, (size_t)N * M);
    zoo_upload(dc, hc, (size_t)N * N);
    dim3 block(32, 8);
    dim3 grid(N / 32, N / 8);
    syrk<<<grid, block>>>(0.5f, 2.0f, da, dc);
    float* out = zoo_download(dc, (size_t)N * N);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < (size_t)N * N; e += 40009, checked++) {
        size_t i = e / N, j = e % N;
        double s = 0;
        for (int k = 0; k < M; k++) s += (double)ha[i * M + k] * ha[j * M + k];
        bad += !zoo_close(2.0 * hc[e] + 0.5 * s, out[e]);
    }
    return zoo_report("syrk", bad, checked, out, (size_t)N * N);
}
