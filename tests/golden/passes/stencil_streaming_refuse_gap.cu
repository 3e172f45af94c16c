// RUN: stencil-streaming
// ----- INPUT
__global__ void every_other(const float* u, float* v, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny)
        return;
    for (int z = 2; z < nz - 2; z++)
        v[(z * ny + y) * nx + x] = u[((z - 2) * ny + y) * nx + x] + u[((z + 2) * ny + y) * nx + x];
}
// ----- EXPECTED
// REFUSED: are not contiguous around 0
