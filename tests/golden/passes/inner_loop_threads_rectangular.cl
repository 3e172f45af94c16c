// RUN: inner-loop-threads{block=16x16}
// ----- INPUT
__kernel void outer(__global const double* x, __global const double* y, __global double* out, const int n)
{
    int r = get_global_id(0);
    if (r >= n) return;
    for (int c = 0; c < n; ++c)
        out[c * n + r] = x[r] * y[c];
}
// ----- EXPECTED
__kernel void outer(__global const double* x, __global const double* y, __global double* out, const int n)
{
    int r = get_global_id(0);
    int c = get_global_id(1);
    if (!(r >= n) && c >= 0 && c < n) {
        out[c * n + r] = x[r] * y[c];
    }
}
