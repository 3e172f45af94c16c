// zoo stencil: FDTD-like electric-field update of ex and ey from hz in one kernel, 1-D grid with row/column from a flat index
#include "../zoo.h"

#define NXF 4096
#define NYF 4096

__global__ void fdtd_e(float* ex, float* ey, const float* hz)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int i = t / NYF;
    int j = t % NYF;
    if (i >= NXF)
        return;
    if (i > 0)
        ey[i * NYF + j] = ey[i * NYF + j] - 0.5f * (hz[i * NYF + j] - hz[(i - 1) * NYF + j]);
    if (j > 0)
        ex[i * (NYF + 1) + j] = ex[i * (NYF + 1) + j] - 0.5f * (hz[i * NYF + j] - hz[i * NYF + (j - 1)]);
}

int main()
{
    float* hex = zoo_rand((size_t)NXF * (NYF + 1), 57);
    float* hey = zoo_rand((size_t)(NXF + 1) * NYF, 58);
    float* hhz = zoo_rand((size_t)NXF * NYF, 59);
    float *dex, *dey, *dhz;
    ZOO_CHECK(cudaMalloc(&dex, (size_t)NXF * (NYF + 1) * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dey, (size_t)(NXF + 1) * NYF * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dhz, (size_t)NXF * NYF * sizeof(float)));
    zoo_upload(dex, hex, (size_t)NXF * (NYF + 1));
    zoo_upload(dey, hey, (size_t)(NXF + 1) * NYF);
    zoo_upload(dhz, hhz, (size_t)NXF * NYF);
    fdtd_e<<<(NXF * NYF + 255) / 256, 256>>>(dex, dey, dhz);
    float* oy = zoo_download(dey, (size_t)(NXF + 1) * NYF);
    float* ox = zoo_download(dex, (size_t)NXF * (NYF + 1));
    int bad = 0, checked = 0;
    for (size_t e = NYF + 1; e < (size_t)NXF * NYF; e += 7919) {
        size_t i = e / NYF, j = e % NYF;
        if (j == 0) continue;
        checked += 2;
        bad += !zoo_close(hey[e] - 0.5 * (hhz[e] - hhz[e - NYF]), oy[e]);
        size_t x = i * (NYF + 1) + j;
        bad += !zoo_close(hex[x] - 0.5 * (hhz[e] - hhz[e - 1]), ox[x]);
    }
    return zoo_report("fdtd_e", bad, checked, oy, (size_t)(NXF + 1) * NYF);
}
