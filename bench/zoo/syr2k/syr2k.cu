// zoo BLAS-3: symmetric rank-2k update C = alpha (A B^T + B A^T) + beta C, macros for the 2-D indexing, local accumulator
#include "../zoo.h"

#define N 2048
#define M 1024
#define A2(i, k) a[(i) * M + (k)]
#define B2(i, k) b[(i) * M + (k)]
#define C2(i, j) c[(i) * N + (j)]

__global__ void syr2k(int n, int m, float alpha, float beta, const float* a, const float* b, float* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) {
        float acc = 0.0f;
        for (int k = 0; k < m; k++)
            acc += A2(j, k) * B2(i, k) + B2(j, k) * A2(i, k);
        C2(i, j) = beta * C2(i, j) + alpha * acc;
    }
}

int main()
{
    float* ha = zoo_rand((size_t)N * M, 32);
    float* hb = zoo_rand((size_t)N * M, 33);
    float* hc = zoo_rand((size_t)N * N, 34);
    float *da, *db, *dc;
    ZOO_CHECK(cudaMalloc(&da, (size_t)N * M * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&db, (size_t)N * M * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dc, (size_t)N * N * sizeof(float)));
    zoo_upload(da, ha, (size_t)N * M);
    zoo_upload(db, hb, (size_t)N * M);
    zoo_upload(dc, hc, (size_t)N * N);
    dim3 block(16, 16);
    dim3 grid(N / 16, N / 16);
    syr2k<<<grid, block>>>(N, M, 0.5f, 1.5f, da, db, dc);
    float* out = zoo_download(dc, (size_t)N * N);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < (size_t)N * N; e += 40009, checked++) {
        size_t i = e / N, j = e % N;
        double s = 0;
        for (int k = 0; k < M; k++) s += (double)ha[j * M + k] * hb[i * M + k] + (double)hb[j * M + k] * ha[i * M + k];
        bad += !zoo_close(1.5 * hc[e] + 0.5 * s, out[e]);
    }
    return zoo_report("syr2k", bad, checked, out, (size_t)N * N);
}
