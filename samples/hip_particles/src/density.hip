/*
 * density.hip - grid density, speed histogram and kinetic energy.
 */
#include <hip/hip_runtime.h>

#include "config.h"
#include "hip_check.h"
#include "particles.h"
#include "nbody_math.h"

/* bin edges of the speed histogram: edges[b] <= |v| < edges[b+1] */
__constant__ float c_bin_edges[NBINS + 1];

void set_histogram_edges(const float* h_edges, int nbins)
{
    HIP_CHECK(hipMemcpyToSymbol(HIP_SYMBOL(c_bin_edges), h_edges,
                                (nbins + 1) * sizeof(float), 0,
                                hipMemcpyHostToDevice));
}

/* Each body adds its mass density to the cell that contains it. */
__global__ void deposit_density(const float4* pos, float* rho, int n, GridSpec g)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;

    float4 p = pos[i];
    int cx = cell_of(p.x, g.lo, g.inv_cell, g.n);
    int cy = cell_of(p.y, g.lo, g.inv_cell, g.n);
    int cz = cell_of(p.z, g.lo, g.inv_cell, g.n);
    atomicAdd(&rho[(cz * g.n + cy) * g.n + cx], p.w / g.cell_vol);
}

/* Linear search over the bin edges, then one global atomic per body.
 * Speeds beyond the last edge are counted in the last bin. */
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

/* Tree reduction of 0.5 m v^2 in dynamic shared memory (blockDim.x must be
 * a power of two, shared size blockDim.x * sizeof(float)); one atomicAdd per
 * block. */
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
