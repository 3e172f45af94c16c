/*
 * kernels_stencil.cu - explicit 3-D heat diffusion and energy reduction.
 */
#include "cuda_check.h"
#include "constants.cuh"
#include "kernels.cuh"

/* Stencil weights; filled by upload_stencil_coeffs() below. */
__constant__ float coeffs[STENCIL_NCOEFF];

void upload_stencil_coeffs(const float* h_coeffs)
{
    CUDA_CHECK(cudaMemcpyToSymbol(coeffs, h_coeffs,
                                  STENCIL_NCOEFF * sizeof(float)));
}

/* u_new = u + r * (c0*u + c1*u[-x] + c2*u[+x] + c3*u[-y] + c4*u[+y]
 *                  + c5*u[-z] + c6*u[+z])
 * with r = alpha*dt/dx^2.  Boundary cells keep their value (Dirichlet). */
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

/* energy += 0.5 * u[i]^2 for every cell; every thread adds its own term
 * to the single global accumulator. */
__global__ void reduce_energy(const float* u, float* energy, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(energy, 0.5f * u[i] * u[i]);
    }
}
