// RUN: thread-coarsen{axis=z factor=4}
// ----- INPUT
__global__ void planes(const float* u, float* v, int n)
{
    __shared__ float t[64];
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    t[threadIdx.x] = u[k * 64 + threadIdx.x];
    __syncthreads();
    v[k * 64 + threadIdx.x] = t[63 - threadIdx.x];
}
// ----- EXPECTED
// REFUSED: barriers, shared memory
