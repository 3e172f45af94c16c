/*
 * kernels_particles.cu - tracer particles moving through the temperature
 * field (buoyancy, gravity, drag), stored as an array of structures.
 */
#include "kernels.cuh"

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
