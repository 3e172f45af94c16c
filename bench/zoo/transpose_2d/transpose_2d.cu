// zoo transpose: out = in^T, 2-D grid, coalesced reads and strided writes
#include "../zoo.h"

#define ROWS 8192
#define COLS 8192

__global__ void transpose_2d(const float* in, float* out)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < ROWS && c < COLS)
        out[c * ROWS + r] = in[r * COLS + c];
}

int main()
{
    size_t n = (size_t)ROWS * COLS;
    float* h = zoo_rand(n, 76);
    float *di, *dout;
    ZOO_CHECK(cudaMalloc(&di, (size_t)ROWS * COLS * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dout, (size_t)ROWS * COLS * sizeof(float)));
    zoo_upload(di, h, n);
    dim3 block(32, 8);
    dim3 grid(COLS / 32, ROWS / 8);
    transpose_2d<<<grid, block>>>(di, dout);
    float* o = zoo_download(dout, n);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < n; e += 10007, checked++) bad += o[(e % COLS) * ROWS + e / COLS] != h[e];
    return zoo_report("transpose_2d", bad, checked, o, n);
}
