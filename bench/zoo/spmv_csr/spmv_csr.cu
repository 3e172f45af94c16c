// zoo SpMV: y = A x with A in CSR (row pointers, column indices, values), one thread per row.
// Self-contained (no ../zoo.h): the benchmark captures this app's own data (`s2s capture` copies only this folder),
// since generated row pointers would not be monotonic.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(call)                                                                                  \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));      \
            std::exit(3);                                                                         \
        }                                                                                         \
    } while (0)

#define NROWS 1048576
#define NNZ_PER_ROW 32
#define NNZ (NROWS * NNZ_PER_ROW)

__global__ void spmv_csr(const int* rowptr, const int* cols, const float* vals, const float* x, float* y, int nrows)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < nrows) {
        float dot = 0.0f;
        for (int k = rowptr[row]; k < rowptr[row + 1]; k++)
            dot += vals[k] * x[cols[k]];
        y[row] = dot;
    }
}

int main()
{
    int* hrp = (int*)malloc((NROWS + 1) * sizeof(int));
    int* hc = (int*)malloc((size_t)NNZ * sizeof(int));
    float* hv = (float*)malloc((size_t)NNZ * sizeof(float));
    float* hx = (float*)malloc(NROWS * sizeof(float));
    unsigned s = 7;
    for (int k = 0; k < NNZ; k++) { s = s * 1664525u + 1013904223u; hv[k] = (float)(s >> 8) / 16777216.0f - 0.5f; }
    for (int r = 0; r < NROWS; r++) { s = s * 1664525u + 1013904223u; hx[r] = (float)(s >> 8) / 16777216.0f - 0.5f; }
    for (int r = 0; r <= NROWS; r++) hrp[r] = r * NNZ_PER_ROW;
    for (int k = 0; k < NNZ; k++) {  // a banded pattern with random offsets: neighbours near the diagonal
        s = s * 1664525u + 1013904223u;
        int c = k / NNZ_PER_ROW + (int)(s >> 20) % 2048 - 1024;
        hc[k] = c < 0 ? -c : (c >= NROWS ? 2 * NROWS - 2 - c : c);
    }
    int *drp, *dc;
    float *dv, *dx, *dy;
    CK(cudaMalloc(&drp, (NROWS + 1) * sizeof(int)));
    CK(cudaMalloc(&dc, (size_t)NNZ * sizeof(int)));
    CK(cudaMalloc(&dv, (size_t)NNZ * sizeof(float)));
    CK(cudaMalloc(&dx, NROWS * sizeof(float)));
    CK(cudaMalloc(&dy, NROWS * sizeof(float)));
    CK(cudaMemcpy(drp, hrp, (NROWS + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dc, hc, (size_t)NNZ * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dv, hv, (size_t)NNZ * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dx, hx, NROWS * sizeof(float), cudaMemcpyHostToDevice));
    spmv_csr<<<NROWS / 256, 256>>>(drp, dc, dv, dx, dy, NROWS);
    float* o = (float*)malloc(NROWS * sizeof(float));
    CK(cudaMemcpy(o, dy, NROWS * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0, checked = 0;
    for (int r = 0; r < NROWS; r += 1009, checked++) {
        double d = 0;
        for (int k = hrp[r]; k < hrp[r + 1]; k++) d += (double)hv[k] * hx[hc[k]];
        bad += std::fabs(d - o[r]) > 1e-3 * (1.0 + std::fabs(d));
    }
    double sum = 0;
    for (int r = 0; r < NROWS; r++) sum += o[r];
    std::printf("spmv_csr: %s (%d of %d checked values wrong) checksum %.6e\n", bad ? "FAILED" : "ok", bad, checked, sum);
    return bad != 0;
}
