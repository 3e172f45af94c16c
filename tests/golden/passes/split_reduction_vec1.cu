// RUN: split-reduction{vec=1}
// ----- INPUT
__global__ void gemv(const float* a, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float sum = 0.0f;
        for (int j = 0; j < n; j++)
            sum += a[i * n + j] * x[j];
        y[i] = sum;
    }
}
// ----- EXPECTED
__global__ void gemv(const float* a, const float* x, float* y, int n)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    float part = 0;
    if (i < n) {
        for (int j = 0 + lane; j < n; j += 32)
            part += a[i * n + j] * x[j];
    }
    for (int off = 16; off > 0; off /= 2)
        part += __shfl_down_sync(0xffffffffu, part, off);
    if (lane == 0 && (i < n)) {
        float sum = 0.0f;
        sum += part;
        y[i] = sum;
    }
}
