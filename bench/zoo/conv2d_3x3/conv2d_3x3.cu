// zoo convolution: 3x3 filter held in __constant__ memory, 2-D grid, zero padding at the borders
#include "../zoo.h"

#define W 4096
#define H 4096

__constant__ float filt[9];

__global__ void conv2d_3x3(const float* img, float* out)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H)
        return;
    float s = 0.0f;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            int xx = x + dx, yy = y + dy;
            if (xx >= 0 && xx < W && yy >= 0 && yy < H)
                s += filt[(dy + 1) * 3 + dx + 1] * img[yy * W + xx];
        }
    out[y * W + x] = s;
}

int main()
{
    size_t n = (size_t)W * H;
    float* h = zoo_rand(n, 60);
    float hf[9] = {0.05f, 0.1f, 0.05f, 0.1f, 0.4f, 0.1f, 0.05f, 0.1f, 0.05f};
    ZOO_CHECK(cudaMemcpyToSymbol(filt, hf, sizeof(hf)));
    float *di, *dout;
    ZOO_CHECK(cudaMalloc(&di, (size_t)W * H * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dout, (size_t)W * H * sizeof(float)));
    zoo_upload(di, h, n);
    dim3 block(16, 16);
    dim3 grid(W / 16, H / 16);
    conv2d_3x3<<<grid, block>>>(di, dout);
    float* o = zoo_download(dout, n);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < n; e += 7919, checked++) {
        long y = e / W, x = e % W;
        double s = 0;
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++)
                if (x + dx >= 0 && x + dx < W && y + dy >= 0 && y + dy < H) s += hf[(dy + 1) * 3 + dx + 1] * h[(y + dy) * W + x + dx];
        bad += !zoo_close(s, o[e]);
    }
    return zoo_report("conv2d_3x3", bad, checked, o, n);
}
