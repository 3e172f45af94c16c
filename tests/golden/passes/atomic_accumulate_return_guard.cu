// RUN: atomic-accumulate
// ----- INPUT
#define SCALE 3u
__global__ void count_big(const float* __restrict__ v, unsigned int* hits, float cut, int n)
{
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i >= n)
        return;
    atomicAdd(hits, (v[i] > cut ? SCALE : 0u));
}
// ----- EXPECTED
#define SCALE 3u
__global__ void count_big(const float* __restrict__ v, unsigned int* hits, float cut, int n)
{
    unsigned int acc = 0;
    for (int i = threadIdx.x + blockIdx.x * blockDim.x; i < (n); i += blockDim.x * gridDim.x)
        acc += (v[i] > cut ? SCALE : 0u);
    atomicAdd(hits, acc);
}
