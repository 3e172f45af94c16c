// s2s extract: kernel reduce_energy from src/kernels_stencil.cu:48
// closure: libclang, with the unit compile flags
// translation unit: src/kernels_stencil.cu
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
// s2s: kernel from src/kernels_stencil.cu:48
__global__ void reduce_energy(const float* u, float* energy, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(energy, 0.5f * u[i] * u[i]);
    }
}
