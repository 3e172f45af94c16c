// RUN: restrict-const
// ----- INPUT
__kernel void axpy(__global float* x, __global float* y, const float a)
{
    int i = get_global_id(0);
    y[i] += a * x[i];
}
// ----- EXPECTED
__kernel void axpy(__global const float* restrict x, __global float* restrict y, const float a)
{
    int i = get_global_id(0);
    y[i] += a * x[i];
}
