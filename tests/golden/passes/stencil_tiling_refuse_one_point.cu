// RUN: stencil-tiling
// ----- INPUT
__global__ void scale(const float* in, float* out, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < nx && y < ny)
        out[y * nx + x] = 2.0f * in[y * nx + x] + in[y * nx + x] * in[y * nx + x];
}
// ----- EXPECTED
// REFUSED: a footprint of 1 point
