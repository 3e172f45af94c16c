// RUN: stencil-streaming
// ----- INPUT
// a neighbour in the next plane off the thread's column: the z+1 plane would need a tile of its own
__global__ void skew(const float* u, float* v, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || x >= nx - 1 || y >= ny)
        return;
    for (int z = 0; z < nz - 1; z++)
        v[(z * ny + y) * nx + x] = u[(z * ny + y) * nx + x] + u[((z + 1) * ny + y) * nx + x - 1];
}
// ----- EXPECTED
// REFUSED: read off the column in another plane
