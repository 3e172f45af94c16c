// zoo transpose: 1-D grid over the output through indexing macros, coalesced writes and strided reads
#include "../zoo.h"

#define N 8192
#define IN(r, c) in[(r) * N + (c)]
#define OUT(r, c) out[(r) * N + (c)]

__global__ void transpose_gather(const float* in, float* out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = t / N;
    int c = t % N;
    if (r < N)
        OUT(r, c) = IN(c, r);
}

int main()
{
    size_t n = (size_t)N * N;
    float* h = zoo_rand(n, 77);
    float *di, *dout;
    ZOO_CHECK(cudaMalloc(&di, (size_t)N * N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dout, (size_t)N * N * sizeof(float)));
    zoo_upload(di, h, n);
    transpose_gather<<<(N * N + 255) / 256, 256>>>(di, dout);
    float* o = zoo_download(dout, n);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < n; e += 10007, checked++) bad += o[(e % N) * N + e / N] != h[e];
    return zoo_report("transpose_gather", bad, checked, o, n);
}
