// Host helpers shared by the zoo apps (never by their kernels): inputs, error checks, a checksum and a verdict.
#pragma once
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

// deterministic values in [lo, hi): a small LCG, so every app's check is reproducible
static inline float* zoo_rand(size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f)
{
    float* h = (float*)std::malloc(n * sizeof(float));
    unsigned s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = lo + (hi - lo) * (float)(s >> 8) / 16777216.0f;
    }
    return h;
}

// the apps allocate with cudaMalloc in main (where s2s extract reads the sizes); this only copies
static inline void zoo_upload(float* d, const float* h, size_t n)
{
    ZOO_CHECK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
}

static inline float* zoo_download(const float* d, size_t n)
{
    float* h = (float*)std::malloc(n * sizeof(float));
    ZOO_CHECK(cudaDeviceSynchronize());
    ZOO_CHECK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
}

static inline bool zoo_close(double want, double got, double rtol = 1e-3)
{
    return std::fabs(want - got) <= rtol * (1.0 + std::fabs(want));
}

// prints "NAME: ok|FAILED (bad of checked) checksum X"; the exit status is the verdict
static inline int zoo_report(const char* name, int bad, int checked, const float* out, size_t n)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += out[i];
    std::printf("%s: %s (%d of %d checked values wrong) checksum %.6e\n", name, bad ? "FAILED" : "ok", bad, checked, sum);
    return bad != 0;
}
