// s2s extract: kernel speed_histogram from src/density.hip:36
// closure: libclang, with the unit compile flags
// translation unit: src/density.hip
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
// s2s: values of -D flags from the compile command
#ifndef NBINS
#define NBINS 64
#endif
// s2s: from src/density.hip:12
__constant__ float c_bin_edges[NBINS + 1];
// s2s: kernel from src/density.hip:36
__global__ void speed_histogram(const float4* vel, unsigned int* hist, int n, int nbins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;

    float4 v = vel[i];
    float s = sqrtf(v.x * v.x + v.y * v.y + v.z * v.z);
    int b = nbins - 1;
    for (int k = 0; k < nbins; ++k) {
        if (s < c_bin_edges[k + 1]) { b = k; break; }
    }
    atomicAdd(&hist[b], 1u);
}
