// zoo BLAS-3: C = alpha A B + beta C with sizes NI x NK x NJ as macros, accumulating in global memory
#include "../zoo.h"

#define NI 2048
#define NJ 2048
#define NK 2048

__global__ void gemm_scaled(float alpha, float beta, const float* a, const float* b, float* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < NI && j < NJ) {
        c[i * NJ + j] *= beta;
        for (int k = 0; k < NK; k++)
            c[i * NJ + j] += alpha * a[i * NK + k] * b[k * NJ + j];
    }
}

int main()
{
    float* ha = zoo_rand((size_t)NI * NK, 22);
    float* hb = zoo_rand((size_t)NK * NJ, 23);
    float* hc = zoo_rand((size_t)NI * NJ, 24);
    float *da, *db, *dc;
    ZOO_CHECK(cudaMalloc(&da, (size_t)NI * NK * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&db, (size_t)NK * NJ * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dc, (size_t)NI * NJ * sizeof(float)));
    zoo_upload(da, ha, (size_t)NI * NK);
    zoo_upload(db, hb, (size_t)NK * NJ);
    zoo_upload(dc, hc, (size_t)NI * NJ);
    dim3 block(32, 8);
    dim3 grid(NJ / 32, NI / 8);
    gemm_scaled<<<grid, block>>>(1.5f, 1.2f, da, db, dc);
    float* out = zoo_download(dc, (size_t)NI * NJ);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < (size_t)NI * NJ; e += 40009, checked++) {
        size_t i = e / NJ, j = e % NJ;
        double s = 0;
        for (int k = 0; k < NK; k++) s += (double)ha[i * NK + k] * hb[(size_t)k * NJ + j];
        bad += !zoo_close(1.2 * hc[e] + 1.5 * s, out[e]);
    }
    return zoo_report("gemm_scaled", bad, checked, out, (size_t)NI * NJ);
}
