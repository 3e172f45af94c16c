// zoo BLAS-3: C = A^T B (A stored K x M, row-major: A[k][i] . B[k][j]), 2-D grid, 2-D array macros
#include "../zoo.h"

#define M 2048
#define K 2048
#define NJ 2048
#define AT(k, i) A[(k) * M + (i)]
#define BB(k, j) B[(k) * NJ + (j)]

__global__ void gemm_tn(const float* A, const float* B, float* C)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M && j < NJ) {
        float s = 0.0f;
        for (int k = 0; k < K; k++)
            s += AT(k, i) * BB(k, j);
        C[i * NJ + j] = s;
    }
}

int main()
{
    float* hA = zoo_rand((size_t)K * M, 27);
    float* hB = zoo_rand((size_t)K * NJ, 28);
    float *dA, *dB, *dC;
    ZOO_CHECK(cudaMalloc(&dA, (size_t)K * M * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dB, (size_t)K * NJ * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dC, (size_t)M * NJ * sizeof(float)));
    zoo_upload(dA, hA, (size_t)K * M);
    zoo_upload(dB, hB, (size_t)K * NJ);
    dim3 block(16, 16);
    dim3 grid(NJ / 16, M / 16);
    gemm_tn<<<grid, block>>>(dA, dB, dC);
    float* hC = zoo_download(dC, (size_t)M * NJ);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < (size_t)M * NJ; e += 40009, checked++) {
        size_t i = e / NJ, j = e % NJ;
        double s = 0;
        for (int k = 0; k < K; k++) s += (double)hA[(size_t)k * M + i] * hB[(size_t)k * NJ + j];
        bad += !zoo_close(s, hC[e]);
    }
    return zoo_report("gemm_tn", bad, checked, hC, (size_t)M * NJ);
}
