// zoo BLAS-3: triangular solve L X = B for NRHS right-hand sides (forward substitution), one thread per column of B.
// Self-contained (the zoo.h helpers inlined): the benchmark captures this app's own data (`s2s capture` copies only this
// folder), since generated inputs would make L ill-conditioned and the substitution overflow.
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
