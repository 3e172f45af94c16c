// RUN: register-accumulation
// ----- INPUT
__kernel void matmul(__global const float* A, __global const float* B, __global float* C, const int n)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i >= n || j >= n) return;
    for (int k = 0; k < n; ++k)
        C[i * n + j] += A[i * n + k] * B[k * n + j];
}
// ----- EXPECTED
__kernel void matmul(__global const float* A, __global const float* B, __global float* C, const int n)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i >= n || j >= n) return;
    float acc = C[i * n + j];
    for (int k = 0; k < n; ++k)
        acc += A[i * n + k] * B[k * n + j];
    C[i * n + j] = acc;
}
