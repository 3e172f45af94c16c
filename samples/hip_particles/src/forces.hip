/*
 * forces.hip - gravitational forces and time integration.
 */
#include <hip/hip_runtime.h>

#include "particles.h"
#include "nbody_math.h"

/* Direct O(n^2) summation: thread i loops over every body j, reading all
 * positions from global memory. */
__global__ void compute_forces_naive(const float4* pos, float4* acc, int n,
                                     float soft2, float G)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;

    float4 pi = pos[i];
    float3 a = make_float3(0.0f, 0.0f, 0.0f);
    for (int j = 0; j < n; ++j) {
        body_body_accel(pi, pos[j], soft2, a);
    }
    acc[i] = make_float4(G * a.x, G * a.y, G * a.z, 0.0f);
}

/* Semi-implicit Euler step with damping and reflecting box walls. */
__global__ void integrate_bodies(float4* pos, float4* vel, const float4* acc,
                                 int n, SimParams p)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;

    float4 x = pos[i];
    float4 v = vel[i];
    float4 a = acc[i];

    v.x = (v.x + a.x * p.dt) * p.damping;
    v.y = (v.y + a.y * p.dt) * p.damping;
    v.z = (v.z + a.z * p.dt) * p.damping;

    x.x += v.x * p.dt;
    x.y += v.y * p.dt;
    x.z += v.z * p.dt;

    reflect_wall(x.x, v.x, p.box);
    reflect_wall(x.y, v.y, p.box);
    reflect_wall(x.z, v.z, p.box);

    pos[i] = x;   /* x.w (mass) is carried through unchanged */
    vel[i] = v;
}
