// RUN: warp-rows
// ----- INPUT
__kernel void matvec(__global const float* A, __global const float* x, __global float* y, const int n)
{
    int i = get_global_id(0);
    float sum = 0.0f;
    for (int k = 0; k < n; ++k) sum += A[i * n + k] * x[k];
    y[i] = sum;
}
// ----- EXPECTED
// REFUSED: OpenCL
