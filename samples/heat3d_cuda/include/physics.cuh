/*
 * physics.cuh - physical parameters, particle data layout and the small
 * device functions shared by the stencil and particle kernels.
 */
#ifndef HEAT3D_PHYSICS_CUH
#define HEAT3D_PHYSICS_CUH

#include <cuda_runtime.h>

/* Simulation parameters, passed BY VALUE to the kernels. */
struct Params {
    float dt;        /* time step                                  */
    float alpha;     /* thermal diffusivity                        */
    float dx;        /* grid spacing (same in x, y and z)          */
    float gravity;   /* gravitational acceleration (negative z)    */
    float buoyancy;  /* buoyancy coefficient per degree            */
    float drag;      /* linear drag coefficient                    */
    float t_ref;     /* reference temperature for buoyancy         */
};

/* One tracer particle (array-of-structures layout). */
struct Particle {
    float x, y, z;     /* position                               */
    float vx, vy, vz;  /* velocity                               */
    float m;           /* mass                                   */
    float T;           /* temperature sampled at the position    */
};

/* Diffusion number r = alpha * dt / dx^2 of the explicit scheme. */
__host__ __device__ __forceinline__ float diffusion_number(const Params p)
{
    return p.alpha * p.dt / (p.dx * p.dx);
}

/* Clamp an integer index into [0, n-1]. */
__host__ __device__ __forceinline__ int clamp_index(int i, int n)
{
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

/* Nearest-cell sample of a NX x NY x NZ field at position (x, y, z). */
__host__ __device__ __forceinline__ float sample_field(const float* u,
                                                       float x, float y, float z,
                                                       int nx, int ny, int nz,
                                                       float dx)
{
    int i = clamp_index((int)(x / dx), nx);
    int j = clamp_index((int)(y / dx), ny);
    int k = clamp_index((int)(z / dx), nz);
    return u[((size_t)k * ny + j) * nx + i];
}

/* Acceleration of a particle: gravity + thermal buoyancy + linear drag. */
__host__ __device__ __forceinline__ float3 particle_accel(const Particle& q,
                                                          float T_local,
                                                          const Params p)
{
    float inv_m = 1.0f / q.m;
    float3 a;
    a.x = -p.drag * q.vx * inv_m;
    a.y = -p.drag * q.vy * inv_m;
    a.z = -p.drag * q.vz * inv_m - p.gravity + p.buoyancy * (T_local - p.t_ref);
    return a;
}

/* Reflect a coordinate at the walls of [0, L]; flips the velocity. */
__host__ __device__ __forceinline__ void reflect(float& x, float& v, float L)
{
    if (x < 0.0f) { x = -x;           v = -v; }
    if (x > L)    { x = 2.0f * L - x; v = -v; }
}

#endif /* HEAT3D_PHYSICS_CUH */
