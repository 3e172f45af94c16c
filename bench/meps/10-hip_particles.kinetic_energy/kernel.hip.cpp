// s2s extract: kernel kinetic_energy from src/density.hip:53
// closure: libclang, with the unit compile flags
// translation unit: src/density.hip
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
// s2s: kernel from src/density.hip:53
__global__ void kinetic_energy(const float4* pos, const float4* vel, float* ke, int n)
{
    HIP_DYNAMIC_SHARED(float, sdata)

    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    float e = 0.0f;
    if (i < n) {
        float4 v = vel[i];
        e = 0.5f * pos[i].w * (v.x * v.x + v.y * v.y + v.z * v.z);
    }
    sdata[tid] = e;
    __syncthreads();

    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(ke, sdata[0]);
}
