// zoo stencil: FDTD-like magnetic-field update hz -= c (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j]), 2-D grid
#include "../zoo.h"

#define NXF 4096
#define NYF 4096

__global__ void fdtd_hz(const float* ex, const float* ey, float* hz)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < NXF - 1 && j < NYF - 1)
        hz[i * NYF + j] = hz[i * NYF + j] - 0.7f * (ex[i * (NYF + 1) + (j + 1)] - ex[i * (NYF + 1) + j] +
                                                    ey[(i + 1) * NYF + j] - ey[i * NYF + j]);
}

int main()
{
    float* hex = zoo_rand((size_t)NXF * (NYF + 1), 54);
    float* hey = zoo_rand((size_t)(NXF + 1) * NYF, 55);
    float* hhz = zoo_rand((size_t)NXF * NYF, 56);
    float *dex, *dey, *dhz;
    ZOO_CHECK(cudaMalloc(&dex, (size_t)NXF * (NYF + 1) * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dey, (size_t)(NXF + 1) * NYF * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dhz, (size_t)NXF * NYF * sizeof(float)));
    zoo_upload(dex, hex, (size_t)NXF * (NYF + 1));
    zoo_upload(dey, hey, (size_t)(NXF + 1) * NYF);
    zoo_upload(dhz, hhz, (size_t)NXF * NYF);
    dim3 block(32, 8);
    dim3 grid(NYF / 32, NXF / 8);
    fdtd_hz<<<grid, block>>>(dex, dey, dhz);
    float* o = zoo_download(dhz, (size_t)NXF * NYF);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < (size_t)NXF * NYF; e += 7919) {
        size_t i = e / NYF, j = e % NYF;
        if (i >= NXF - 1 || j >= NYF - 1) continue;
        double want = hhz[e] - 0.7 * (hex[i * (NYF + 1) + j + 1] - hex[i * (NYF + 1) + j] + hey[(i + 1) * NYF + j] - hey[i * NYF + j]);
        bad += !zoo_close(want, o[e]);
        checked++;
    }
    return zoo_report("fdtd_hz", bad, checked, o, (size_t)NXF * NYF);
}
