// zoo: batched small matrices, C_b = A_b B_b for 8x8 blocks, one thread per output element (64 per matrix)
#include "../zoo.h"

#define BATCH 262144
#define DIM 8

__global__ void batched_gemm8(const float* A, const float* B, float* C)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int b = t / (DIM * DIM);
    int r = (t / DIM) % DIM;
    int col = t % DIM;
    if (b < BATCH) {
        const float* a = A + b * DIM * DIM;
        const float* bb = B + b * DIM * DIM;
        float s = 0.0f;
        for (int k = 0; k < DIM; k++)
            s += a[r * DIM + k] * bb[k * DIM + col];
        C[b * DIM * DIM + r * DIM + col] = s;
    }
}

int main()
{
    size_t n = (size_t)BATCH * DIM * DIM;
    float* hA = zoo_rand(n, 38);
    float* hB = zoo_rand(n, 39);
    float *dA, *dB, *dC;
    ZOO_CHECK(cudaMalloc(&dA, (size_t)BATCH * DIM * DIM * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dB, (size_t)BATCH * DIM * DIM * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dC, (size_t)BATCH * DIM * DIM * sizeof(float)));
    zoo_upload(dA, hA, n);
    zoo_upload(dB, hB, n);
    batched_gemm8<<<(BATCH * DIM * DIM + 255) / 256, 256>>>(dA, dB, dC);
    float* hC = zoo_download(dC, n);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < n; e += 9973, checked++) {
        size_t b = e / 64, r = (e / 8) % 8, c = e % 8;
        double s = 0;
        for (int k = 0; k < 8; k++) s += (double)hA[b * 64 + r * 8 + k] * hB[b * 64 + k * 8 + c];
        bad += !zoo_close(s, hC[e]);
    }
    return zoo_report("batched_gemm8", bad, checked, hC, n);
}
