// zoo stencil: 2-D Jacobi 5-point sweep, 2-D grid, explicit index arithmetic, interior points only
#include "../zoo.h"

#define NX 4096
#define NY 4096

__global__ void jacobi2d(const float* in, float* out)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && x < NX - 1 && y > 0 && y < NY - 1)
        out[y * NX + x] = 0.2f * (in[y * NX + x] + in[y * NX + x - 1] + in[y * NX + x + 1] + in[(y - 1) * NX + x] +
                                  in[(y + 1) * NX + x]);
}

int main()
{
    size_t n = (size_t)NX * NY;
    float* h = zoo_rand(n, 50);
    float *din, *dout;
    ZOO_CHECK(cudaMalloc(&din, (size_t)NX * NY * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dout, (size_t)NX * NY * sizeof(float)));
    zoo_upload(din, h, n);
    zoo_upload(dout, h, n);
    dim3 block(32, 8);
    dim3 grid(NX / 32, NY / 8);
    jacobi2d<<<grid, block>>>(din, dout);
    float* o = zoo_download(dout, n);
    int bad = 0, checked = 0;
    for (size_t e = NX + 1; e < n - NX - 1; e += 7919) {
        size_t x = e % NX;
        if (x == 0 || x == NX - 1) continue;
        bad += !zoo_close(0.2 * (h[e] + h[e - 1] + h[e + 1] + h[e - NX] + h[e + NX]), o[e]);
        checked++;
    }
    return zoo_report("jacobi2d", bad, checked, o, n);
}
