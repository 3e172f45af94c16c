// zoo BLAS-3: C = A B, row-major, 2-D grid, one thread per output, accumulator in a register
#include "../zoo.h"

#define N 2048

__global__ void gemm_naive(const float* A, const float* B, float* C, int n)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; ++k)
            acc += A[row * n + k] * B[k * n + col];
        C[row * n + col] = acc;
    }
}

int main()
{
    size_t nn = (size_t)N * N;
    float* hA = zoo_rand(nn, 20);
    float* hB = zoo_rand(nn, 21);
    float *dA, *dB, *dC;
    ZOO_CHECK(cudaMalloc(&dA, (size_t)N * N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dB, (size_t)N * N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dC, (size_t)N * N * sizeof(float)));
    zoo_upload(dA, hA, nn);
    zoo_upload(dB, hB, nn);
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (N + 15) / 16);
    gemm_naive<<<grid, block>>>(dA, dB, dC, N);
    float* hC = zoo_download(dC, nn);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < nn; e += 40009, checked++) {
        size_t i = e / N, j = e % N;
        double s = 0;
        for (int k = 0; k < N; k++) s += (double)hA[i * N + k] * hB[(size_t)k * N + j];
        bad += !zoo_close(s, hC[e]);
    }
    return zoo_report("gemm_naive", bad, checked, hC, nn);
}
