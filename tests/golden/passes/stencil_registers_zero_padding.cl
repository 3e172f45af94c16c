// RUN: stencil-registers{factor=8}
// ----- INPUT
// zero padding inside the window (the point read is tested, not the thread): the window loads every point some
// thread reads; the filter sits in __constant memory and under the test: it stays where it is
__kernel void conv3(__global const float* img, __constant float* filt, __global float* out, const int w, const int h)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x >= w || y >= h)
        return;
    float s = 0.0f;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            int xx = x + dx, yy = y + dy;
            if (xx >= 0 && xx < w && yy >= 0 && yy < h)
                s += filt[(dy + 1) * 3 + dx + 1] * img[yy * w + xx];
        }
    out[y * w + x] = s;
}
// ----- EXPECTED
// zero padding inside the window (the point read is tested, not the thread): the window loads every point some
// thread reads; the filter sits in __constant memory and under the test: it stays where it is
__kernel void conv3(__global const float* img, __constant float* filt, __global float* out, const int w, const int h)
{
    int x = get_global_id(0);
    const int ybase = ((int)get_global_id(1)) * 8;
    float img_w[10][3];
    #pragma unroll
    for (int wr = 0; wr < 10; wr++) {
        #pragma unroll
        for (int wc = 0; wc < 3; wc++) {
            const int gy = ybase + wr - 1;
            const int gx = x + wc - 1;
            img_w[wr][wc] = (0 < h && 0 < w && gy >= 0 && gy < h && gx >= 0 && gx < w) ? img[w * gy + gx] : (float)0;
        }
    }
    #pragma unroll
    for (int cy = 0; cy < 8; ++cy) {
        int y = ybase + cy;
        if (x >= w || y >= h)
            continue;
        float s = 0.0f;
        #pragma unroll
        for (int dy = -1; dy <= 1; dy++) {
            #pragma unroll
            for (int dx = -1; dx <= 1; dx++) {
                int xx = x + dx, yy = y + dy;
                if (xx >= 0 && xx < w && yy >= 0 && yy < h)
                    s += filt[(dy + 1) * 3 + dx + 1] * img_w[cy + dy + 1][dx + 1];
            }
        }
        out[y * w + x] = s;
    }
}
