// RUN: stencil-tiling{block=16x8}
// ----- INPUT
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
__kernel void conv3(__global const float* img, __constant float* filt, __global float* out, const int w, const int h)
{
    __local float img_tile[10][18];
    for (int ly = get_local_id(1); ly < 10; ly += 8)
        for (int lx = get_local_id(0); lx < 18; lx += 16) {
            int gy = (int)get_group_id(1) * 8 + ly - 1;
            int gx = (int)get_group_id(0) * 16 + lx - 1;
            img_tile[ly][lx] = (0 < h && 0 < w && gy >= 0 && gy < h && gx >= 0 && gx < w) ? img[w * gy + gx] : (float)0;
        }
    barrier(CLK_LOCAL_MEM_FENCE);
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x >= w || y >= h)
        return;
    float s = 0.0f;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            int xx = x + dx, yy = y + dy;
            if (xx >= 0 && xx < w && yy >= 0 && yy < h)
                s += filt[(dy + 1) * 3 + dx + 1] * img_tile[get_local_id(1) + dy + 1][get_local_id(0) + dx + 1];
        }
    out[y * w + x] = s;
}
