// RUN: stencil-registers
// ----- INPUT
// the kernel updates the array it reads around its point: no read-only input to hold in registers
__global__ void smooth(float* u, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || x >= w - 1 || y < 1 || y >= h - 1)
        return;
    u[y * w + x] = 0.5f * u[y * w + x] + 0.25f * (u[(y - 1) * w + x] + u[(y + 1) * w + x]);
}
// ----- EXPECTED
// REFUSED: no stencil input: u is also written by the kernel (in place)
