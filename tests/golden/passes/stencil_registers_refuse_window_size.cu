// RUN: stencil-registers{factor=32}
// ----- INPUT
// 32 rows per thread over a 7x7 footprint: 38 x 7 window registers and 49 coefficients, over the limit (they would spill)
#define R 3
__global__ void conv7(const float* img, const float* k, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < R || x >= w - R || y < R || y >= h - R)
        return;
    float s = 0.0f;
    for (int i = -R; i <= R; i++)
        for (int j = -R; j <= R; j++)
            s += k[(i + R) * 7 + j + R] * img[(y + i) * w + x + j];
    out[y * w + x] = s;
}
// ----- EXPECTED
// REFUSED: the window and coefficients need 315 registers per thread, over 160
