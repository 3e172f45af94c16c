// RUN: stencil-tiling
// ----- INPUT
__global__ void smooth(float* u, int n)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && x < n - 1 && y > 0 && y < n - 1)
        u[y * n + x] = 0.5f * (u[y * n + x - 1] + u[y * n + x + 1]);
}
// ----- EXPECTED
// REFUSED: u is also written by the kernel (in place)
