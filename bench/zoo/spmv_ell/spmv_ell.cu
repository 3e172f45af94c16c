// zoo SpMV: y = A x with A in ELLPACK, column-major slots (slot k of row r at k * NR + r) so a warp's loads coalesce
// Self-contained (no ../zoo.h): the benchmark captures this app's own data (`s2s capture` copies only this folder),
// since generated column indices would be uniform over x, not banded as the app's (r + [0, 4096)) are.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define ZOO_CHECK(call)                                                                        \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));   \
            std::exit(3);                                                                      \
        }                                                                                      \
    } while (0)

static float* ell_rand(size_t n, unsigned seed)  // ../zoo.h's zoo_rand on [-1, 1): the same values
{
    float* h = (float*)std::malloc(n * sizeof(float));
    unsigned s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = -1.0f + 2.0f * (float)(s >> 8) / 16777216.0f;
    }
    return h;
}

#define NR 1048576
#define SLOTS 32

__global__ void spmv_ell(const int* __restrict__ idx, const float* __restrict__ val, const float* __restrict__ x,
                         float* __restrict__ y)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= NR)
        return;
    float s = 0.0f;
    for (int k = 0; k < SLOTS; k++) {
        int c = idx[k * NR + r];
        s += val[k * NR + r] * x[c];
    }
    y[r] = s;
}

int main()
{
    size_t nz = (size_t)NR * SLOTS;
    int* hi = (int*)malloc(nz * sizeof(int));
    float* hv = ell_rand(nz, 92);
    float* hx = ell_rand(NR, 93);
    unsigned s = 11;
    for (size_t e = 0; e < nz; e++) {
        s = s * 1664525u + 1013904223u;
        hi[e] = (int)((e % NR + (s >> 16) % 4096) % NR);
    }
    int* di;
    float *dv, *dx, *dy;
    ZOO_CHECK(cudaMalloc(&di, (size_t)NR * SLOTS * sizeof(int)));
    ZOO_CHECK(cudaMalloc(&dv, (size_t)NR * SLOTS * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dx, NR * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dy, NR * sizeof(float)));
    ZOO_CHECK(cudaMemcpy(di, hi, nz * sizeof(int), cudaMemcpyHostToDevice));
    ZOO_CHECK(cudaMemcpy(dv, hv, nz * sizeof(float), cudaMemcpyHostToDevice));
    ZOO_CHECK(cudaMemcpy(dx, hx, NR * sizeof(float), cudaMemcpyHostToDevice));
    spmv_ell<<<NR / 256, 256>>>(di, dv, dx, dy);
    float* o = (float*)malloc(NR * sizeof(float));
    ZOO_CHECK(cudaDeviceSynchronize());
    ZOO_CHECK(cudaMemcpy(o, dy, NR * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0, checked = 0;
    for (int r = 0; r < NR; r += 1009, checked++) {
        double d = 0;
        for (int k = 0; k < SLOTS; k++) d += (double)hv[(size_t)k * NR + r] * hx[hi[(size_t)k * NR + r]];
        bad += std::fabs(d - o[r]) > 1e-3 * (1.0 + std::fabs(d));
    }
    double sum = 0;
    for (int r = 0; r < NR; r++) sum += o[r];
    std::printf("spmv_ell: %s (%d of %d checked values wrong) checksum %.6e\n", bad ? "FAILED" : "ok", bad, checked, sum);
    return bad != 0;
}
