/*
 * nbody_math.h - small device helpers for the particle kernels.
 */
#ifndef HIPP_NBODY_MATH_H
#define HIPP_NBODY_MATH_H

#include <hip/hip_runtime.h>

/* Acceleration of body i caused by body j (softened gravity), added to acc.
 * pj.w holds the mass of body j. */
__device__ __forceinline__ void body_body_accel(const float4 pi, const float4 pj,
                                                float soft2, float3& acc)
{
    float dx = pj.x - pi.x;
    float dy = pj.y - pi.y;
    float dz = pj.z - pi.z;
    float r2 = dx * dx + dy * dy + dz * dz + soft2;
    float inv_r = 1.0f / sqrtf(r2);
    float s = pj.w * inv_r * inv_r * inv_r;
    acc.x += dx * s;
    acc.y += dy * s;
    acc.z += dz * s;
}

/* Reflect coordinate x (and velocity v) at the walls of [-L, L]. */
__device__ __forceinline__ void reflect_wall(float& x, float& v, float L)
{
    if (x < -L) { x = -2.0f * L - x; v = -v; }
    if (x >  L) { x =  2.0f * L - x; v = -v; }
}

/* Cell index of coordinate x in a grid of n cells starting at lo. */
__device__ __forceinline__ int cell_of(float x, float lo, float inv_cell, int n)
{
    int c = (int)floorf((x - lo) * inv_cell);
    return c < 0 ? 0 : (c >= n ? n - 1 : c);
}

#endif /* HIPP_NBODY_MATH_H */
