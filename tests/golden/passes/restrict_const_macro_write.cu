// RUN: restrict-const
// ----- INPUT
#define Y(i) y[(i) * incy]
#define X(i) x[(i) * incx]
__global__ void axpby(float* x, float* y, float alpha, float beta, int n, int incx, int incy)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        Y(i) = alpha * X(i) + beta * Y(i);
}
// ----- EXPECTED
#define Y(i) y[(i) * incy]
#define X(i) x[(i) * incx]
__global__ void axpby(const float* __restrict__ x, float* __restrict__ y, float alpha, float beta, int n, int incx, int incy)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        Y(i) = alpha * X(i) + beta * Y(i);
}
