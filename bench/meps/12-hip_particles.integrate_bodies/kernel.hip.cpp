// s2s extract: kernel integrate_bodies from src/forces.hip:26
// closure: libclang, with the unit compile flags
// translation unit: src/forces.hip
#include <hip/hip_runtime.h>
// s2s: from include/particles.h:13
struct SimParams {
    float dt;        /* time step                              */
    float box;       /* half width of the reflecting box       */
    float damping;   /* velocity damping factor per step       */
};
// s2s: from include/nbody_math.h:26
__device__ __forceinline__ void reflect_wall(float& x, float& v, float L)
{
    if (x < -L) { x = -2.0f * L - x; v = -v; }
    if (x >  L) { x =  2.0f * L - x; v = -v; }
}
// s2s: kernel from src/forces.hip:26
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
