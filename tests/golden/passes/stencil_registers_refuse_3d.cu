// RUN: stencil-registers
// ----- INPUT
// a 3-D grid: a register window along y would hold whole planes; stencil-streaming marches along z instead
__global__ void lap(const float* u, float* v, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < 1 || y < 1 || z < 1 || x >= nx - 1 || y >= ny - 1 || z >= nz - 1)
        return;
    int c = (z * ny + y) * nx + x;
    v[c] = u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] + u[c - nx * ny] + u[c + nx * ny] - 6.0f * u[c];
}
// ----- EXPECTED
// REFUSED: a 3-D stencil: stencil-streaming marches along z
