// RUN: smem-tiling{tile=8}
// ----- INPUT
__kernel void matmul(__global const float* A, __global const float* B, __global float* C, const int n)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i >= n || j >= n) return;
    C[i * n + j] = 0;
    for (int k = 0; k < n; ++k)
        C[i * n + j] += A[i * n + k] * B[k * n + j];
}
// ----- EXPECTED
__kernel void matmul(__global const float* A, __global const float* B, __global float* C, const int n)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    __local float As[8][8];
    __local float Bs[8][8];
    float part = 0;
    for (int t = 0; t < n; t += 8) {
        {
            int k = t + get_local_id(0);
            As[get_local_id(1)][get_local_id(0)] = (i < n && k < n) ? A[i * n + k] : (float)0;
        }
        {
            int k = t + get_local_id(1);
            Bs[get_local_id(1)][get_local_id(0)] = (k < n && j < n) ? B[k * n + j] : (float)0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < 8; ++kk)
            part += As[get_local_id(1)][kk] * Bs[kk][get_local_id(0)];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (i >= n || j >= n) return;
    C[i * n + j] = 0;
    C[i * n + j] += part;
}
