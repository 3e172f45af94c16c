// RUN: stencil-streaming
// ----- INPUT
__global__ void edge(const float* u, float* v, int nx, int ny, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= nx || j >= ny || k >= nz) return;
    if (i == 0 || k == 0 || i == nx - 1 || k == nz - 1) {
        v[(k * ny + j) * nx + i] = u[(k * ny + j) * nx + i];
        return;
    }
    v[(k * ny + j) * nx + i] = u[(k * ny + j) * nx + i - 1] + u[((k - 1) * ny + j) * nx + i] + u[((k + 1) * ny + j) * nx + i];
}
// ----- EXPECTED
// REFUSED: an early exit runs statements before it returns
