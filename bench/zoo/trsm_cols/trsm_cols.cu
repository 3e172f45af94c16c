// zoo BLAS-3: triangular solve L X = B for NRHS right-hand sides (forward substitution), one thread per column of B
#include "../zoo.h"

#define N 512
#define NRHS 8192

__global__ void trsm_cols(const float* L, float* B)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= NRHS)
        return;
    for (int i = 0; i < N; i++) {
        float s = B[i * NRHS + c];
        for (int k = 0; k < i; k++)
            s -= L[i * N + k] * B[k * NRHS + c];
        B[i * NRHS + c] = s / L[i * N + i];
    }
}

int main()
{
    float* hL = zoo_rand((size_t)N * N, 35, -0.01f, 0.01f);
    for (int i = 0; i < N; i++) hL[(size_t)i * N + i] = 1.0f + (float)(i % 3);
    float* hB = zoo_rand((size_t)N * NRHS, 36);
    float *dL, *dB;
    ZOO_CHECK(cudaMalloc(&dL, (size_t)N * N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dB, (size_t)N * NRHS * sizeof(float)));
    zoo_upload(dL, hL, (size_t)N * N);
    zoo_upload(dB, hB, (size_t)N * NRHS);
    trsm_cols<<<NRHS / 128, 128>>>(dL, dB);
    float* X = zoo_download(dB, (size_t)N * NRHS);
    int bad = 0, checked = 0;  // residual check: row i of L X equals row i of B
    for (int i = 0; i < N; i += 211)
        for (int c = 0; c < NRHS; c += 509, checked++) {
            double s = 0;
            for (int k = 0; k <= i; k++) s += (double)hL[(size_t)i * N + k] * X[(size_t)k * NRHS + c];
            bad += !zoo_close(hB[(size_t)i * NRHS + c], s);
        }
    return zoo_report("trsm_cols", bad, checked, X, (size_t)N * NRHS);
}
