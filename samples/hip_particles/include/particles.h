/*
 * particles.h - parameter structs and kernel declarations.
 *
 * Positions are float4 (x, y, z, mass), velocities and accelerations are
 * float4 with an unused w component.
 */
#ifndef HIPP_PARTICLES_H
#define HIPP_PARTICLES_H

#include <hip/hip_runtime.h>

/* time-integration parameters, passed by value */
struct SimParams {
    float dt;        /* time step                              */
    float box;       /* half width of the reflecting box       */
    float damping;   /* velocity damping factor per step       */
};

/* uniform deposit grid, passed by value */
struct GridSpec {
    float lo;        /* lower corner (same in x, y, z)         */
    float inv_cell;  /* 1 / cell width                         */
    int   n;         /* cells per dimension                    */
    float cell_vol;  /* volume of one cell                     */
};

/* ---- src/forces.hip --------------------------------------------------- */

/* all-pairs gravitational acceleration, one thread per body */
__global__ void compute_forces_naive(const float4* pos, float4* acc, int n,
                                     float soft2, float G);

/* v += a*dt, x += v*dt, reflecting walls */
__global__ void integrate_bodies(float4* pos, float4* vel, const float4* acc,
                                 int n, SimParams p);

/* ---- src/density.hip -------------------------------------------------- */

/* nearest-grid-point mass deposit: rho[cell] += m / cell_vol */
__global__ void deposit_density(const float4* pos, float* rho, int n, GridSpec g);

/* histogram of speeds with bin edges from constant memory */
__global__ void speed_histogram(const float4* vel, unsigned int* hist, int n, int nbins);

/* ke += 0.5 m v^2 (block reduction in dynamic shared memory) */
__global__ void kinetic_energy(const float4* pos, const float4* vel, float* ke, int n);

/* copy nbins+1 bin edges into constant memory (src/density.hip) */
void set_histogram_edges(const float* h_edges, int nbins);

#endif /* HIPP_PARTICLES_H */
