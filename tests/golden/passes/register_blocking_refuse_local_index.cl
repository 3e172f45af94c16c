// RUN: register-blocking
// ----- INPUT
__kernel void matmul(__global const float* A, __global const float* B, __global float* C, const int n)
{
    int j = get_local_id(0);
    int i = get_global_id(1);
    if (i >= n || j >= n) return;
    float sum = 0.0f;
    for (int k = 0; k < n; ++k)
        sum += A[i * n + k] * B[k * n + j];
    C[i * n + j] = sum;
}
// ----- EXPECTED
// REFUSED: only the global-index declarations
