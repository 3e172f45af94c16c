// RUN: stencil-streaming
// ----- INPUT
// a guard inside the loop on z: which planes are read is no longer the loop's range
__global__ void partial(const float* u, float* v, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny)
        return;
    for (int z = 1; z < nz - 1; z++) {
        if (z > 4)
            v[(z * ny + y) * nx + x] = u[((z - 1) * ny + y) * nx + x] + u[(z * ny + y) * nx + x] + u[((z + 1) * ny + y) * nx + x];
    }
}
// ----- EXPECTED
// REFUSED: a guard inside the loop bounds z
