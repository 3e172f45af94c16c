// RUN: delinearize-2d,stencil-registers{cols=4}
// ----- INPUT
// a 5x5 convolution over a 1-D launch, the filter in global memory: delinearized, then 4 rows x 4 columns per
// thread from an 8x8 register window whose rows are read as float2, float4, float2 where they start aligned and lie
// inside the image (else element by element), the 25 coefficients loaded once per thread; rows streamed: each row's
// terms added to the 16 sums right after its load, the sums stored as one float4 a row where all 4 are inside
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
// a 5x5 convolution over a 1-D launch, the filter in global memory: delinearized, then 4 rows x 4 columns per
// thread from an 8x8 register window whose rows are read as float2, float4, float2 where they start aligned and lie
// inside the image (else element by element), the 25 coefficients loaded once per thread; rows streamed: each row's
// terms added to the 16 sums right after its load, the sums stored as one float4 a row where all 4 are inside
#define W 1000
#define H 999
#define R 2
__global__ void conv5(const float* __restrict__ img, const float* __restrict__ k, float* __restrict__ out)
{
    const int xbase = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    const int ybase = (blockIdx.y * blockDim.y + threadIdx.y) * 4;
    float k_r[5][5];
    bool any = false;
    #pragma unroll
    for (int cy = 0; cy < 4; ++cy) {
        #pragma unroll
        for (int cx = 0; cx < 4; ++cx) {
            int y = ybase + cy;
            int x = xbase + cx;
            any = any || !(y < R || y >= H - R || x < R || x >= W - R || x >= W);
        }
    }
    if (!any)
        return;
    #pragma unroll
    for (int i = -2; i < 3; i++) {
        #pragma unroll
        for (int j = -2; j < 3; j++) {
            k_r[i + 2][j + 2] = k[(i + R) * (2 * R + 1) + (j + R)];
        }
    }
    float s_a[4][4];
    #pragma unroll
    for (int cy = 0; cy < 4; ++cy) {
        #pragma unroll
        for (int cx = 0; cx < 4; ++cx) {
            s_a[cy][cx] = 0.0f;
        }
    }
    float img_w[8][8];
    #pragma unroll
    for (int wr = 0; wr < 8; wr++) {
        const int gy = ybase + wr - 2;
        bool ok = (size_t)(const void*)&img[W * gy + xbase] % 16 == 0;
        ok = ok && (R < H - R && R < -R + W && R < W && gy >= R - 2 && gy < H - R + 2 && (xbase - 2) >= R - 2 && (xbase - 2) < -R + W + 2 && (xbase - 2) < W + 2);
        ok = ok && (R < H - R && R < -R + W && R < W && gy >= R - 2 && gy < H - R + 2 && (xbase + 5) >= R - 2 && (xbase + 5) < -R + W + 2 && (xbase + 5) < W + 2);
        if (ok) {
            const float2 v0 = *(const float2*)&img[W * gy + xbase - 2];
            img_w[wr][0] = v0.x;
            img_w[wr][1] = v0.y;
            const float4 v1 = *(const float4*)&img[W * gy + xbase];
            img_w[wr][2] = v1.x;
            img_w[wr][3] = v1.y;
            img_w[wr][4] = v1.z;
            img_w[wr][5] = v1.w;
            const float2 v2 = *(const float2*)&img[W * gy + xbase + 4];
            img_w[wr][6] = v2.x;
            img_w[wr][7] = v2.y;
        } else {
            #pragma unroll
            for (int wc = 0; wc < 8; wc++) {
                const int gx = xbase + wc - 2;
                img_w[wr][wc] = (R < H - R && R < -R + W && R < W && gy >= R - 2 && gy < H - R + 2 && gx >= R - 2 && gx < -R + W + 2 && gx < W + 2) ? img[W * gy + gx] : (float)0;
            }
        }
        #pragma unroll
        for (int cy = 0; cy < 4; ++cy) {
            #pragma unroll
            for (int cx = 0; cx < 4; ++cx) {
                const int i = wr - cy - 2;
                if (i >= -2 && i < 3) {
                    #pragma unroll
                    for (int j = -R; j <= R; j++)
                        s_a[cy][cx] += k_r[i + 2][j + 2] * img_w[cy + i + 2][cx + j + 2];
                }
            }
        }
    }
    #pragma unroll
    for (int cy = 0; cy < 4; ++cy) {
        int y = ybase + cy;
        bool whole = true;
        #pragma unroll
        for (int cx = 0; cx < 4; ++cx) {
            int x = xbase + cx;
            whole = whole && !(y < R || y >= H - R || x < R || x >= W - R || x >= W);
        }
        float* o = &out[(y * W + xbase)];
        if (whole && (size_t)(void*)o % 16 == 0) {
            *(float4*)o = make_float4(s_a[cy][0], s_a[cy][1], s_a[cy][2], s_a[cy][3]);
        } else {
            #pragma unroll
            for (int cx = 0; cx < 4; ++cx) {
                int x = xbase + cx;
                if (y < R || y >= H - R || x < R || x >= W - R || x >= W)
                    continue;
                out[(y * W + x)] = s_a[cy][cx];
            }
        }
    }
}
