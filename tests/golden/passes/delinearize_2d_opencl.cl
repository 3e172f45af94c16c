// RUN: delinearize-2d{block=16x16}
// ----- INPUT
__kernel void scale_rows(__global const float* a, __global const float* w, __global float* out, const int rows, const int cols)
{
    int t = get_global_id(0);
    int r = t / cols;
    int c = t % cols;
    if (r >= rows) return;
    out[r * cols + c] = w[r] * a[r * cols + c];
}
// ----- EXPECTED
__kernel void scale_rows(__global const float* a, __global const float* w, __global float* out, const int rows, const int cols)
{
    int c = get_global_id(0);
    int r = get_global_id(1);
    if (r >= rows || c >= cols) return;
    out[r * cols + c] = w[r] * a[r * cols + c];
}
