// zoo histogram: 256 bins of values in [0, 1), grid-stride loop, atomics straight into global memory
#include "../zoo.h"

#define N (1 << 25)
#define BINS 256

__global__ void histo_global(const float* v, unsigned int* hist, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int b = (int)(v[i] * BINS);
        b = b < 0 ? 0 : (b >= BINS ? BINS - 1 : b);
        atomicAdd(&hist[b], 1u);
    }
}

int main()
{
    float* h = zoo_rand(N, 75, 0.0f, 1.0f);
    float* d;
    unsigned int* dh;
    ZOO_CHECK(cudaMalloc(&d, (size_t)N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dh, BINS * sizeof(unsigned int)));
    zoo_upload(d, h, N);
    ZOO_CHECK(cudaMemset(dh, 0, BINS * sizeof(unsigned int)));
    histo_global<<<2048, 256>>>(d, dh, N);
    unsigned int got[BINS];
    ZOO_CHECK(cudaMemcpy(got, dh, sizeof(got), cudaMemcpyDeviceToHost));
    unsigned int want[BINS] = {0};
    for (int i = 0; i < N; i++) { int b = (int)(h[i] * BINS); want[b < 0 ? 0 : (b >= BINS ? BINS - 1 : b)]++; }
    int bad = 0;
    float asf[BINS];
    for (int b = 0; b < BINS; b++) { bad += want[b] != got[b]; asf[b] = (float)got[b]; }
    return zoo_report("histo_global", bad, BINS, asf, BINS);
}
