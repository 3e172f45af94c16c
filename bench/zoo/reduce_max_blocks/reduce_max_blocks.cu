// zoo reduction: maximum, grid-stride loop into a local, then an interleaved shared-memory tree (modulo test), per-block result
#include "../zoo.h"

#define N (1 << 25)
#define THREADS 512
#define BLOCKS 1024

__global__ void reduce_max_blocks(const float* in, float* blockmax, int n)
{
    __shared__ float s[THREADS];
    float m = -3.0e38f;
    for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += THREADS * BLOCKS)
        m = fmaxf(m, in[i]);
    s[threadIdx.x] = m;
    __syncthreads();
    for (unsigned int stride = 1; stride < THREADS; stride *= 2) {
        if (threadIdx.x % (2 * stride) == 0)
            s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + stride]);
        __syncthreads();
    }
    if (threadIdx.x == 0)
        blockmax[blockIdx.x] = s[0];
}

int main()
{
    float* h = zoo_rand(N, 71);
    float *d, *dm;
    ZOO_CHECK(cudaMalloc(&d, (size_t)N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dm, BLOCKS * sizeof(float)));
    zoo_upload(d, h, N);
    reduce_max_blocks<<<BLOCKS, THREADS>>>(d, dm, N);
    float* o = zoo_download(dm, BLOCKS);
    int bad = 0;
    for (int b = 0; b < BLOCKS; b++) {
        float want = -3.0e38f;
        for (int i = b * THREADS; i < N; i += THREADS * BLOCKS)
            for (int t = 0; t < THREADS; t++) want = fmaxf(want, h[i + t]);
        bad += want != o[b];
    }
    return zoo_report("reduce_max_blocks", bad, BLOCKS, o, BLOCKS);
}
