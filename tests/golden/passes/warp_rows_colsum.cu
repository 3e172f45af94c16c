// RUN: warp-rows{lanes=16}
// ----- INPUT
__global__ void colsum(const float* Acm, float* colsum, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float sum = 0.0f;
    for (int i = 0; i < n; i++)
        sum += Acm[j * n + i];
    colsum[j] = sum;
}
// ----- EXPECTED
__global__ void colsum(const float* Acm, float* colsum, int n)
{
    int j = (blockIdx.x * blockDim.x + threadIdx.x) / 16;
    const int lane = threadIdx.x % 16;
    const unsigned mask = 0xffffu << (threadIdx.x % 32u / 16 * 16);
    if (j >= n) return;
    float sum = 0.0f;
    for (int i = 0 + lane; i < n; i += 16)
        sum += Acm[j * n + i];
    for (int off = 16 / 2; off > 0; off /= 2)
        sum += __shfl_down_sync(mask, sum, off, 16);
    if (lane != 0) return;
    colsum[j] = sum;
}
