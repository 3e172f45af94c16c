// RUN: loop-unroll{factor=8}
// ----- INPUT
__kernel void rowsum(__global const float* A, __global float* s, const int n)
{
    int i = get_global_id(0);
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) {
        acc += A[i * n + j];
    }
    s[i] = acc;
}
// ----- EXPECTED
__kernel void rowsum(__global const float* A, __global float* s, const int n)
{
    int i = get_global_id(0);
    float acc = 0.0f;
    #pragma unroll 8
    for (int j = 0; j < n; ++j) {
        acc += A[i * n + j];
    }
    s[i] = acc;
}
