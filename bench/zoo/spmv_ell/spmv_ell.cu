// zoo SpMV: y = A x with A in ELLPACK, column-major slots (slot k of row r at k * NR + r) so a warp's loads coalesce
#include "../zoo.h"

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
    float* hv = zoo_rand(nz, 92);
    float* hx = zoo_rand(NR, 93);
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
    zoo_upload(dv, hv, nz);
    zoo_upload(dx, hx, NR);
    spmv_ell<<<NR / 256, 256>>>(di, dv, dx, dy);
    float* o = zoo_download(dy, NR);
    int bad = 0, checked = 0;
    for (int r = 0; r < NR; r += 1009, checked++) {
        double d = 0;
        for (int k = 0; k < SLOTS; k++) d += (double)hv[(size_t)k * NR + r] * hx[hi[(size_t)k * NR + r]];
        bad += !zoo_close(d, o[r]);
    }
    return zoo_report("spmv_ell", bad, checked, o, NR);
}
