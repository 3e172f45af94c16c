// zoo reduction: sum of squares, one element per thread, every thread adds into one global float by atomics
#include "../zoo.h"

#define N (1 << 24)

__global__ void reduce_atomic(const float* in, float* total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(total, in[i] * in[i]);
}

int main()
{
    float* h = zoo_rand(N, 70);
    float *d, *dt;
    ZOO_CHECK(cudaMalloc(&d, (size_t)N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dt, sizeof(float)));
    zoo_upload(d, h, N);
    ZOO_CHECK(cudaMemset(dt, 0, sizeof(float)));
    reduce_atomic<<<(N + 255) / 256, 256>>>(d, dt, N);
    float* o = zoo_download(dt, 1);
    double want = 0;
    for (int i = 0; i < N; i++) want += (double)h[i] * h[i];
    return zoo_report("reduce_atomic", !zoo_close(want, o[0], 5e-2), 1, o, 1);
}
