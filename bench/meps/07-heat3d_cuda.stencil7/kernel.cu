// s2s extract: kernel stencil7 from src/kernels_stencil.cu:20
// closure: libclang, with the unit compile flags
// translation unit: src/kernels_stencil.cu
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
// s2s: from include/constants.cuh:14
#define STENCIL_NCOEFF 7
// s2s: from include/physics.cuh:11
struct Params {
    float dt;        /* time step                                  */
    float alpha;     /* thermal diffusivity                        */
    float dx;        /* grid spacing (same in x, y and z)          */
    float gravity;   /* gravitational acceleration (negative z)    */
    float buoyancy;  /* buoyancy coefficient per degree            */
    float drag;      /* linear drag coefficient                    */
    float t_ref;     /* reference temperature for buoyancy         */
};
// s2s: from include/physics.cuh:30
__host__ __device__ __forceinline__ float diffusion_number(const Params p)
{
    return p.alpha * p.dt / (p.dx * p.dx);
}
// s2s: from src/kernels_stencil.cu:9
__constant__ float coeffs[STENCIL_NCOEFF];
// s2s: kernel from src/kernels_stencil.cu:20
__global__ void stencil7(const float* u, float* u_new,
                         int nx, int ny, int nz, Params p)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= nx || j >= ny || k >= nz) return;

    size_t sx = 1;
    size_t sy = (size_t)nx;
    size_t sz = (size_t)nx * ny;
    size_t c  = k * sz + j * sy + i;

    if (i == 0 || j == 0 || k == 0 || i == nx - 1 || j == ny - 1 || k == nz - 1) {
        u_new[c] = u[c];
        return;
    }

    float lap = coeffs[0] * u[c]
              + coeffs[1] * u[c - sx] + coeffs[2] * u[c + sx]
              + coeffs[3] * u[c - sy] + coeffs[4] * u[c + sy]
              + coeffs[5] * u[c - sz] + coeffs[6] * u[c + sz];

    u_new[c] = u[c] + diffusion_number(p) * lap;
}
