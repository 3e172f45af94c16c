// zoo BLAS-1: dot product, one element per thread, block tree reduction in shared memory, one partial per block
#include "../zoo.h"

#define N (1 << 24)
#define BLOCK 256

__global__ void dot_blocks(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ partial)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    buf[t] = i < N ? x[i] * y[i] : 0.0f;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0)
        partial[blockIdx.x] = buf[0];
}

int main()
{
    const int blocks = (N + BLOCK - 1) / BLOCK;
    float* hx = zoo_rand(N, 3);
    float* hy = zoo_rand(N, 4);
    float *dx, *dy, *dp;
    ZOO_CHECK(cudaMalloc(&dx, (size_t)N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dy, (size_t)N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dp, (size_t)blocks * sizeof(float)));
    zoo_upload(dx, hx, N);
    zoo_upload(dy, hy, N);
    dot_blocks<<<blocks, BLOCK>>>(dx, dy, dp);
    float* hp = zoo_download(dp, blocks);
    int bad = 0;
    for (int b = 0; b < blocks; b += 1021) {
        double want = 0.0;
        for (int i = b * BLOCK; i < (b + 1) * BLOCK; i++) want += (double)hx[i] * hy[i];
        bad += !zoo_close(want, hp[b]);
    }
    return zoo_report("dot_blocks", bad, blocks / 1021 + 1, hp, blocks);
}
