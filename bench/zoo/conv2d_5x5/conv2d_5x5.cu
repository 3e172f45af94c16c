// zoo convolution: 5x5 filter passed in global memory, 1-D grid, interior only (valid convolution)
#include "../zoo.h"

#define W 4096
#define H 4096
#define R 2

__global__ void conv2d_5x5(const float* __restrict__ img, const float* __restrict__ k, float* __restrict__ out)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    int y = p / W, x = p % W;
    if (y < R || y >= H - R || x < R || x >= W - R)
        return;
    float s = 0.0f;
    for (int i = -R; i <= R; i++)
        for (int j = -R; j <= R; j++)
            s += k[(i + R) * (2 * R + 1) + (j + R)] * img[(y + i) * W + (x + j)];
    out[p] = s;
}

int main()
{
    size_t n = (size_t)W * H;
    float* h = zoo_rand(n, 61);
    float* hk = zoo_rand(25, 62, 0.0f, 0.08f);
    float *di, *dk, *dout;
    ZOO_CHECK(cudaMalloc(&di, (size_t)W * H * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dk, 25 * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dout, (size_t)W * H * sizeof(float)));
    zoo_upload(di, h, n);
    zoo_upload(dk, hk, 25);
    zoo_upload(dout, h, n);
    conv2d_5x5<<<(W * H + 255) / 256, 256>>>(di, dk, dout);
    float* o = zoo_download(dout, n);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < n; e += 7919) {
        long y = e / W, x = e % W;
        if (y < R || y >= H - R || x < R || x >= W - R) continue;
        double s = 0;
        for (int i = -R; i <= R; i++)
            for (int j = -R; j <= R; j++) s += hk[(i + R) * 5 + j + R] * h[(y + i) * W + x + j];
        bad += !zoo_close(s, o[e]);
        checked++;
    }
    return zoo_report("conv2d_5x5", bad, checked, o, n);
}
