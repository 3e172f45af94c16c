// RUN: thread-coarsen{axis=x factor=2}
// KERNEL: scale
// ----- INPUT
__global__ void scale(float* y, const float* x, float a, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i];
    }
}
// ----- EXPECTED
__global__ void scale(float* y, const float* x, float a, int n)
{
    #pragma unroll
    for (int cx = 0; cx < 2; ++cx) {
        const int i = (blockIdx.x * 2 + cx) * blockDim.x + threadIdx.x;
        if (i < n) {
            y[i] = a * x[i];
        }
    }
}
