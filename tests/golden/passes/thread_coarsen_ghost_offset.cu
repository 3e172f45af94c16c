// RUN: thread-coarsen{axis=y factor=2}
// KERNEL: relax
// ----- INPUT
#define NG 2
__global__ void relax(const double* u, double* v, int nx, int ny)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x + NG;
    int j = threadIdx.y + blockIdx.y * blockDim.y + NG;
    if (i >= nx - NG || j >= ny - NG) return;
    v[j * nx + i] = 0.25 * (u[j * nx + i - 1] + u[j * nx + i + 1] + u[(j - 1) * nx + i] + u[(j + 1) * nx + i]);
}
// ----- EXPECTED
#define NG 2
__global__ void relax(const double* u, double* v, int nx, int ny)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x + NG;
    #pragma unroll
    for (int cy = 0; cy < 2; ++cy) {
        int j = (blockIdx.y * blockDim.y + threadIdx.y) * 2 + cy + NG;
        if (i >= nx - NG || j >= ny - NG) continue;
        v[j * nx + i] = 0.25 * (u[j * nx + i - 1] + u[j * nx + i + 1] + u[(j - 1) * nx + i] + u[(j + 1) * nx + i]);
    }
}
