// s2s extract: kernel particles_step from src/kernels_particles.cu:7
// closure: libclang, with the unit compile flags
// translation unit: src/kernels_particles.cu
#include <cuda_runtime.h>
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
// s2s: from include/physics.cuh:22
struct Particle {
    float x, y, z;     /* position                               */
    float vx, vy, vz;  /* velocity                               */
    float m;           /* mass                                   */
    float T;           /* temperature sampled at the position    */
};
// s2s: from include/physics.cuh:36
__host__ __device__ __forceinline__ int clamp_index(int i, int n)
{
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
}
// s2s: from include/physics.cuh:42
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
// s2s: from include/physics.cuh:54
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
// s2s: from include/physics.cuh:67
__host__ __device__ __forceinline__ void reflect(float& x, float& v, float L)
{
    if (x < 0.0f) { x = -x;           v = -v; }
    if (x > L)    { x = 2.0f * L - x; v = -v; }
}
// s2s: kernel from src/kernels_particles.cu:7
__global__ void particles_step(Particle* parts, int npart, const float* u,
                               int nx, int ny, int nz, Params p)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= npart) return;

    Particle q = parts[idx];

    /* temperature at the particle position */
    float T = sample_field(u, q.x, q.y, q.z, nx, ny, nz, p.dx);
    float3 a = particle_accel(q, T, p);

    /* semi-implicit Euler */
    q.vx += p.dt * a.x;
    q.vy += p.dt * a.y;
    q.vz += p.dt * a.z;
    q.x  += p.dt * q.vx;
    q.y  += p.dt * q.vy;
    q.z  += p.dt * q.vz;

    /* keep the particle inside the box */
    reflect(q.x, q.vx, nx * p.dx);
    reflect(q.y, q.vy, ny * p.dx);
    reflect(q.z, q.vz, nz * p.dx);

    /* relax the particle temperature towards the local field value */
    q.T += 0.5f * (T - q.T);

    parts[idx] = q;
}
