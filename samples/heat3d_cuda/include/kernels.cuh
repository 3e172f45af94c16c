/*
 * kernels.cuh - declarations of the kernels defined in src/kernels_*.cu.
 */
#ifndef HEAT3D_KERNELS_CUH
#define HEAT3D_KERNELS_CUH

#include <cuda_runtime.h>
#include "physics.cuh"

/* ---- src/kernels_linalg.cu ------------------------------------------- */
namespace linalg {

/* C = A * B, n x n, row-major; one thread per element of C */
__global__ void matmul_naive(const float* A, const float* B, float* C, int n);

/* y = A * x, one thread per row of the row-major matrix A */
__global__ void matvec_rows(const float* A, const float* x, float* y, int n);

/* At = A^T, one thread per element */
__global__ void transpose_naive(const float* A, float* At, int n);

/* colsum[j] = sum_i A(i,j) for A stored column-major (Acm[j*n + i]);
 * one thread per column walking down that column */
__global__ void colsum_strided(const float* Acm, float* colsum, int n);

} // namespace linalg

/* ---- src/kernels_stencil.cu ------------------------------------------ */

/* one explicit step of 3-D heat diffusion with a 7-point stencil */
__global__ void stencil7(const float* u, float* u_new,
                         int nx, int ny, int nz, Params p);

/* energy += sum 0.5 * u^2 */
__global__ void reduce_energy(const float* u, float* energy, int n);

/* ---- src/kernels_particles.cu ---------------------------------------- */

/* advance npart particles by one step through the temperature field u */
__global__ void particles_step(Particle* parts, int npart, const float* u,
                               int nx, int ny, int nz, Params p);

#endif /* HEAT3D_KERNELS_CUH */
