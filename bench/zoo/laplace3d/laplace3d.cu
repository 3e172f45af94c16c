// zoo stencil: 3-D 7-point Laplacian with a 3-D grid (one thread per point) and an indexing macro, 512^3
#include "../zoo.h"

#define NX 512
#define NY 512
#define NZ 512
#define AT(a, i, j, k) a[((size_t)(k) * NY + (j)) * NX + (i)]

__global__ void laplace3d(const float* in, float* out, float h2inv)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i > 0 && i < NX - 1 && j > 0 && j < NY - 1 && k > 0 && k < NZ - 1)
        AT(out, i, j, k) = h2inv * (AT(in, i - 1, j, k) + AT(in, i + 1, j, k) + AT(in, i, j - 1, k) + AT(in, i, j + 1, k) +
                                    AT(in, i, j, k - 1) + AT(in, i, j, k + 1) - 6.0f * AT(in, i, j, k));
}

int main()
{
    size_t n = (size_t)NX * NY * NZ;
    float* h = zoo_rand(n, 53);
    float *di, *dout;
    ZOO_CHECK(cudaMalloc(&di, (size_t)NX * NY * NZ * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dout, (size_t)NX * NY * NZ * sizeof(float)));
    zoo_upload(di, h, n);
    zoo_upload(dout, h, n);
    dim3 block(32, 4, 2);
    dim3 grid(NX / 32, NY / 4, NZ / 2);
    laplace3d<<<grid, block>>>(di, dout, 0.25f);
    float* o = zoo_download(dout, n);
    int bad = 0, checked = 0;
    const size_t P = (size_t)NX * NY;
    for (size_t e = P + NX + 1; e < n - P - NX - 1; e += 100019) {
        size_t x = e % NX, y = (e / NX) % NY, z = e / P;
        if (x == 0 || x == NX - 1 || y == 0 || y == NY - 1 || z == 0 || z == NZ - 1) continue;
        bad += !zoo_close(0.25 * (h[e - 1] + h[e + 1] + h[e - NX] + h[e + NX] + h[e - P] + h[e + P] - 6.0 * h[e]), o[e], 1e-2);
        checked++;
    }
    return zoo_report("laplace3d", bad, checked, o, n);
}
