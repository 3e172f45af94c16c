// zoo histogram: per-block privatized histogram in shared memory (64 bins of byte values), merged by global atomics
#include "../zoo.h"

#define N (1 << 26)
#define NBINS 64

__global__ void histo_shared(const unsigned char* data, int* bins, int n)
{
    __shared__ int local[NBINS];
    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&local[data[i] % NBINS], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        atomicAdd(&bins[b], local[b]);
}

int main()
{
    unsigned char* h = (unsigned char*)malloc(N);
    unsigned s = 99;
    for (int i = 0; i < N; i++) { s = s * 1664525u + 1013904223u; h[i] = (unsigned char)(s >> 24); }
    unsigned char* d;
    int* db;
    ZOO_CHECK(cudaMalloc(&d, (size_t)N * sizeof(unsigned char)));
    ZOO_CHECK(cudaMalloc(&db, NBINS * sizeof(int)));
    ZOO_CHECK(cudaMemcpy(d, h, N, cudaMemcpyHostToDevice));
    ZOO_CHECK(cudaMemset(db, 0, NBINS * sizeof(int)));
    histo_shared<<<(N + 255) / 256, 256>>>(d, db, N);
    int got[NBINS];
    ZOO_CHECK(cudaMemcpy(got, db, sizeof(got), cudaMemcpyDeviceToHost));
    int want[NBINS] = {0};
    for (int i = 0; i < N; i++) want[h[i] % NBINS]++;
    int bad = 0;
    float asf[NBINS];
    for (int b = 0; b < NBINS; b++) { bad += want[b] != got[b]; asf[b] = (float)got[b]; }
    return zoo_report("histo_shared", bad, NBINS, asf, NBINS);
}
