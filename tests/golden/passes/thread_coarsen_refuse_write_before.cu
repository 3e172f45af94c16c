// RUN: thread-coarsen{axis=z factor=4}
// ----- INPUT
__global__ void count_and_scale(float* u, int* visits, int nx, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(visits, 1);
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i < nx && k < nz) u[k * nx + i] *= 2.0f;
}
// ----- EXPECTED
// REFUSED: a statement before the index
