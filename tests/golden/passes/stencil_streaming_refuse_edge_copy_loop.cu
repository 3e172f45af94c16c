// RUN: stencil-streaming
// ----- INPUT
// a boundary copy before a loop over z: the copy would have to run inside the marching loop
__global__ void edge_loop(const float* u, float* v, int nx, int ny, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= nx || j >= ny) return;
    if (i == 0 || i == nx - 1) {
        v[j * nx + i] = u[j * nx + i];
        return;
    }
    for (int k = 1; k < nz - 1; k++)
        v[(k * ny + j) * nx + i] = u[(k * ny + j) * nx + i - 1] + u[((k - 1) * ny + j) * nx + i] + u[((k + 1) * ny + j) * nx + i];
}
// ----- EXPECTED
// REFUSED: needs a 3-D grid, or a 2-D grid whose threads run one loop over z
