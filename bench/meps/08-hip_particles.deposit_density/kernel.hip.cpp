// s2s extract: kernel deposit_density from src/density.hip:22
// closure: libclang, with the unit compile flags
// translation unit: src/density.hip
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
// s2s: from include/particles.h:20
struct GridSpec {
    float lo;        /* lower corner (same in x, y, z)         */
    float inv_cell;  /* 1 / cell width                         */
    int   n;         /* cells per dimension                    */
    float cell_vol;  /* volume of one cell                     */
};
// s2s: from include/nbody_math.h:33
__device__ __forceinline__ int cell_of(float x, float lo, float inv_cell, int n)
{
    int c = (int)floorf((x - lo) * inv_cell);
    return c < 0 ? 0 : (c >= n ? n - 1 : c);
}
// s2s: kernel from src/density.hip:22
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
