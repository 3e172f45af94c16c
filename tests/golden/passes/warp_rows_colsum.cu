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
    const int i_head = (0) + (int)((16u - (reinterpret_cast<unsigned long long>(&Acm[j * n + (0)]) & 15u)) & 15u) / 4;
    if (((reinterpret_cast<unsigned long long>(&Acm[j * n + (i_head)])) & 15) == 0) {
        for (int i = (0) + lane; i < i_head && i < (n); i += 16)
            sum += Acm[j * n + i];
        const int i_end = (i_head) + ((n) - (i_head)) / 4 * 4;
        for (int i = (i_head) + 4 * lane; i < i_end; i += 64) {
            const float4 w0 = *reinterpret_cast<const float4*>(&Acm[j * n + i]);
            sum += w0.x;
            sum += w0.y;
            sum += w0.z;
            sum += w0.w;
        }
        for (int i = i_end + lane; i < (n); i += 16)
            sum += Acm[j * n + i];
    } else {
        for (int i = (0) + lane; i < n; i += 16)
            sum += Acm[j * n + i];
    }
    for (int off = 16 / 2; off > 0; off /= 2)
        sum += __shfl_down_sync(mask, sum, off, 16);
    if (lane != 0) return;
    colsum[j] = sum;
}
