// RUN: delinearize-2d,stencil-registers
// ----- INPUT
// a 5x5 convolution over a 1-D launch (p -> y = p / W, x = p % W), the filter in global memory: delinearized, then
// 4 rows per thread from an 8x5 register window, the 25 coefficients loaded once per thread
#define W 1000
#define H 999
#define R 2
__global__ void conv5(const float* __restrict__ img, const float* __restrict__ k, float* __restrict__ out)
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
// ----- EXPECTED
// a 5x5 convolution over a 1-D launch (p -> y = p / W, x = p % W), the filter in global memory: delinearized, then
// 4 rows per thread from an 8x5 register window, the 25 coefficients loaded once per thread
#define W 1000
#define H 999
#define R 2
__global__ void conv5(const float* __restrict__ img, const float* __restrict__ k, float* __restrict__ out)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int ybase = (blockIdx.y * blockDim.y + threadIdx.y) * 4;
    float img_w[8][5];
    #pragma unroll
    for (int wr = 0; wr < 8; wr++) {
        #pragma unroll
        for (int wc = 0; wc < 5; wc++) {
            const int gy = ybase + wr - 2;
            const int gx = x + wc - 2;
            img_w[wr][wc] = (R < H - R && R < -R + W && R < W && gy >= R - 2 && gy < H - R + 2 && gx >= R - 2 && gx < -R + W + 2 && gx < W + 2) ? img[W * gy + gx] : (float)0;
        }
    }
    float k_r[5][5];
    bool k_r_loaded = false;
    #pragma unroll
    for (int cy = 0; cy < 4; ++cy) {
        int y = ybase + cy;
        if (y < R || y >= H - R || x < R || x >= W - R || x >= W)
            continue;
        float s = 0.0f;
        if (!k_r_loaded) {
            #pragma unroll
            for (int i = -2; i < 3; i++) {
                #pragma unroll
                for (int j = -2; j < 3; j++) {
                    k_r[i + 2][j + 2] = k[(i + R) * (2 * R + 1) + (j + R)];
                }
            }
            k_r_loaded = true;
        }
        #pragma unroll
        for (int i = -R; i <= R; i++) {
            #pragma unroll
            for (int j = -R; j <= R; j++)
                s += k_r[i + 2][j + 2] * img_w[cy + i + 2][j + 2];
        }
        out[(y * W + x)] = s;
    }
}
