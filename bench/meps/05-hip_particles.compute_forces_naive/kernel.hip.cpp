// s2s extract: kernel compute_forces_naive from src/forces.hip:11
// closure: libclang, with the unit compile flags
// translation unit: src/forces.hip
#include <hip/hip_runtime.h>
// s2s: from include/nbody_math.h:11
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
// s2s: kernel from src/forces.hip:11
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
