// RUN: contraction-triangle{kgroups=2}
// ----- INPUT
#define N 300
#define K 45

__global__ void lower(const float* __restrict__ a, float* __restrict__ c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (j > i || i >= N || j >= N)
        return;
    float s = 0.0f;
    for (int k = 0; k < K; k++)
        s += a[k * N + i] * a[k * N + j];
    c[i * N + j] = s;
}
// ----- EXPECTED
// REFUSED: kgroups needs tile=64 (the 8 x 8 sums of 256 threads would need 64 KB of shared memory to meet)
