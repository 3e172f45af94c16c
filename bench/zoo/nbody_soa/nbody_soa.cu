// zoo n-body: potential energy per body from separate x, y, z, m arrays (structure of arrays), 1/r with the self term skipped
#include "../zoo.h"

#define NB 32768

__global__ void nbody_soa(const float* x, const float* y, const float* z, const float* m, float* phi)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < NB) {
        float p = 0.0f;
        for (int j = 0; j < NB; j++) {
            if (j == i)
                continue;
            float dx = x[j] - x[i];
            float dy = y[j] - y[i];
            float dz = z[j] - z[i];
            p -= m[j] / sqrtf(dx * dx + dy * dy + dz * dz + 1e-4f);
        }
        phi[i] = p;
    }
}

int main()
{
    float* hx = zoo_rand(NB, 81);
    float* hy = zoo_rand(NB, 82);
    float* hz = zoo_rand(NB, 83);
    float* hm = zoo_rand(NB, 84, 0.5f, 1.0f);
    float *dx, *dy, *dz, *dm, *dphi;
    ZOO_CHECK(cudaMalloc(&dx, NB * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dy, NB * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dz, NB * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dm, NB * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dphi, NB * sizeof(float)));
    zoo_upload(dx, hx, NB);
    zoo_upload(dy, hy, NB);
    zoo_upload(dz, hz, NB);
    zoo_upload(dm, hm, NB);
    nbody_soa<<<NB / 128, 128>>>(dx, dy, dz, dm, dphi);
    float* o = zoo_download(dphi, NB);
    int bad = 0, checked = 0;
    for (int i = 0; i < NB; i += 1021, checked++) {
        double p = 0;
        for (int j = 0; j < NB; j++) {
            if (j == i) continue;
            double ddx = hx[j] - hx[i], ddy = hy[j] - hy[i], ddz = hz[j] - hz[i];
            p -= hm[j] / sqrt(ddx * ddx + ddy * ddy + ddz * ddz + 1e-4);
        }
        bad += !zoo_close(p, o[i], 1e-2);
    }
    return zoo_report("nbody_soa", bad, checked, o, NB);
}
