// RUN: stencil-streaming
// ----- INPUT
__global__ void jacobi(const float* in, float* out, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && x < nx - 1 && y > 0 && y < ny - 1)
        out[y * nx + x] = 0.25f * (in[y * nx + x - 1] + in[y * nx + x + 1] + in[(y - 1) * nx + x] + in[(y + 1) * nx + x]);
}
// ----- EXPECTED
// REFUSED: needs a 3-D grid, or a 2-D grid whose threads run one loop over z
