// zoo stencil: 3-D 7-point heat step, 2-D grid over (x, y) marching along z (the streaming dimension), 512^3
#include "../zoo.h"

#define NX 512
#define NY 512
#define NZ 512

__global__ void heat3d_zloop(const float* u, float* unew, float c0, float c1)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || x >= NX - 1 || y < 1 || y >= NY - 1)
        return;
    for (int z = 1; z < NZ - 1; z++) {
        int c = (z * NY + y) * NX + x;
        unew[c] = c0 * u[c] + c1 * (u[c - 1] + u[c + 1] + u[c - NX] + u[c + NX] + u[c - NX * NY] + u[c + NX * NY]);
    }
}

int main()
{
    size_t n = (size_t)NX * NY * NZ;
    float* h = zoo_rand(n, 52);
    float *du, *dn;
    ZOO_CHECK(cudaMalloc(&du, (size_t)NX * NY * NZ * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dn, (size_t)NX * NY * NZ * sizeof(float)));
    zoo_upload(du, h, n);
    zoo_upload(dn, h, n);
    dim3 block(32, 4);
    dim3 grid(NX / 32, NY / 4);
    heat3d_zloop<<<grid, block>>>(du, dn, 0.4f, 0.1f);
    float* o = zoo_download(dn, n);
    int bad = 0, checked = 0;
    const size_t P = (size_t)NX * NY;
    for (size_t e = P + NX + 1; e < n - P - NX - 1; e += 100019) {
        size_t x = e % NX, y = (e / NX) % NY, z = e / P;
        if (x == 0 || x == NX - 1 || y == 0 || y == NY - 1 || z == 0 || z == NZ - 1) continue;
        bad += !zoo_close(0.4 * h[e] + 0.1 * (h[e - 1] + h[e + 1] + h[e - NX] + h[e + NX] + h[e - P] + h[e + P]), o[e]);
        checked++;
    }
    return zoo_report("heat3d_zloop", bad, checked, o, n);
}
