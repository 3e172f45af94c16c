// zoo BLAS-3: column-major C = A B through BLAS-style macros, 1-D grid, one thread per output (consecutive threads: rows)
#include "../zoo.h"

#define N 2048
#define IDX2C(i, j, ld) ((j) * (ld) + (i))

__global__ void gemm_colmajor(const float* A, const float* B, float* C, int m, int n, int k)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int i = t % m;
    int j = t / m;
    if (j >= n)
        return;
    float s = 0.0f;
    for (int p = 0; p < k; p++)
        s += A[IDX2C(i, p, m)] * B[IDX2C(p, j, k)];
    C[IDX2C(i, j, m)] = s;
}

int main()
{
    size_t nn = (size_t)N * N;
    float* hA = zoo_rand(nn, 25);
    float* hB = zoo_rand(nn, 26);
    float *dA, *dB, *dC;
    ZOO_CHECK(cudaMalloc(&dA, (size_t)N * N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dB, (size_t)N * N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dC, (size_t)N * N * sizeof(float)));
    zoo_upload(dA, hA, nn);
    zoo_upload(dB, hB, nn);
    gemm_colmajor<<<(N * N + 255) / 256, 256>>>(dA, dB, dC, N, N, N);
    float* hC = zoo_download(dC, nn);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < nn; e += 40009, checked++) {
        size_t i = e % N, j = e / N;
        double s = 0;
        for (int p = 0; p < N; p++) s += (double)hA[(size_t)p * N + i] * hB[j * N + p];
        bad += !zoo_close(s, hC[e]);
    }
    return zoo_report("gemm_colmajor", bad, checked, hC, nn);
}
