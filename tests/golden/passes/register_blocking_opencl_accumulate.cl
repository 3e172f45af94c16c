// RUN: register-blocking{tile=32 rx=2 ry=2 tk=8}
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
    __local float As[32][9];
    __local float Bs[8][32];
    float acc[4];
    const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * 16 + tx;
    const int row0 = get_group_id(1) * 32, col0 = get_group_id(0) * 32;
    #pragma unroll
    for (int m = 0; m < 4; ++m) {
        int i = row0 + ty + m / 2 * 16;
        int j = col0 + tx + m % 2 * 16;
        acc[m] = 0;
        if (i < n && j < n) {
            acc[m] = C[i * n + j];
        }
    }
    for (int t = 0; t < n; t += 8) {
        for (int e = tid; e < 32 * 8; e += 256) {
            int i = row0 + e / 8;
            int k = t + e % 8;
            As[e / 8][e % 8] = (i < n && k < n) ? A[i * n + k] : (float)0;
        }
        for (int e = tid; e < 8 * 32; e += 256) {
            int k = t + e / 32;
            int j = col0 + e % 32;
            Bs[e / 32][e % 32] = (k < n && j < n) ? B[k * n + j] : (float)0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
            float ra[2], rb[2];
            #pragma unroll
            for (int m = 0; m < 2; ++m) ra[m] = As[ty + m * 16][kk];
            #pragma unroll
            for (int m = 0; m < 2; ++m) rb[m] = Bs[kk][tx + m * 16];
            #pragma unroll
            for (int m = 0; m < 4; ++m) acc[m] += ra[m / 2] * rb[m % 2];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    #pragma unroll
    for (int m = 0; m < 4; ++m) {
        int i = row0 + ty + m / 2 * 16;
        int j = col0 + tx + m % 2 * 16;
        if (i < n && j < n) {
            C[i * n + j] = acc[m];
        }
    }
}
