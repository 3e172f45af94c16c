// zoo n-body: gravitational accelerations, float4 positions (x, y, z, mass) as an array of structures, one thread per body
#include "../zoo.h"

#define NBODIES 32768
#define SOFT2 0.01f

__global__ void nbody_aos(const float4* pos, float4* acc, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float4 pi = pos[i];
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (int j = 0; j < n; j++) {
        float4 pj = pos[j];
        float dx = pj.x - pi.x, dy = pj.y - pi.y, dz = pj.z - pi.z;
        float r2 = dx * dx + dy * dy + dz * dz + SOFT2;
        float inv = rsqrtf(r2);
        float f = pj.w * inv * inv * inv;
        ax += f * dx;
        ay += f * dy;
        az += f * dz;
    }
    acc[i] = make_float4(ax, ay, az, 0.0f);
}

int main()
{
    float* h = zoo_rand((size_t)NBODIES * 4, 80);
    for (int i = 0; i < NBODIES; i++) h[4 * i + 3] = 0.5f + 0.5f * h[4 * i + 3];
    float4 *dp, *da;
    ZOO_CHECK(cudaMalloc(&dp, (size_t)NBODIES * sizeof(float4)));
    ZOO_CHECK(cudaMalloc(&da, (size_t)NBODIES * sizeof(float4)));
    zoo_upload((float*)dp, h, (size_t)NBODIES * 4);
    nbody_aos<<<NBODIES / 256, 256>>>(dp, da, NBODIES);
    float* o = zoo_download((float*)da, (size_t)NBODIES * 4);
    int bad = 0, checked = 0;
    for (int i = 0; i < NBODIES; i += 1021, checked++) {
        double ax = 0;
        for (int j = 0; j < NBODIES; j++) {
            double dx = h[4 * j] - h[4 * i], dy = h[4 * j + 1] - h[4 * i + 1], dz = h[4 * j + 2] - h[4 * i + 2];
            double r2 = dx * dx + dy * dy + dz * dz + SOFT2;
            ax += h[4 * j + 3] / (r2 * sqrt(r2)) * dx;
        }
        bad += !zoo_close(ax, o[4 * i], 1e-2);
    }
    return zoo_report("nbody_aos", bad, checked, o, (size_t)NBODIES * 4);
}
