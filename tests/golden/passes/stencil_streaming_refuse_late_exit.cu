// RUN: stencil-streaming
// ----- INPUT
// an early exit after a statement of the work: moved into the loop it would skip the barriers
__global__ void late(const float* in, float* out, int nx, int ny, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    out[0] = 0.0f;
    if (i < 1 || i >= nx - 1 || j < 1 || j >= ny - 1 || k < 1 || k >= nz - 1)
        return;
    out[(k * ny + j) * nx + i] = in[((k - 1) * ny + j) * nx + i] + in[(k * ny + j) * nx + i - 1] + in[(k * ny + j) * nx + i];
}
// ----- EXPECTED
// REFUSED: an early exit after the work began
