// RUN: warp-rows{vec=1}
// ----- INPUT
__global__ void matvec(const float* A, const float* x, float* y, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) {
        sum += A[row * n + j] * x[j];
    }
    y[row] = sum;
}
// ----- EXPECTED
__global__ void matvec(const float* A, const float* x, float* y, int n)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    const unsigned mask = 0xffffffffu;
    if (row >= n) return;
    float sum = 0.0f;
    for (int j = 0 + lane; j < n; j += 32) {
        sum += A[row * n + j] * x[j];
    }
    for (int off = 32 / 2; off > 0; off /= 2)
        sum += __shfl_down_sync(mask, sum, off, 32);
    if (lane != 0) return;
    y[row] = sum;
}
