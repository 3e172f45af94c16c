// RUN: triangular-solve-blocking{strip=32 rows=32 rpt=4}
// ----- INPUT
#define N 45
#define NRHS 70
__kernel void trsm_cl(__global const float* L, __global float* B)
{
    int c = get_global_id(0);
    if (c >= NRHS)
        return;
    for (int i = 0; i < N; i++) {
        float s = B[i * NRHS + c];
        for (int k = 0; k < i; k++)
            s -= L[i * N + k] * B[k * NRHS + c];
        B[i * NRHS + c] = s / L[i * N + i];
    }
}
// ----- EXPECTED
// REFUSED: the strip form is written for CUDA only (float4 loads, 48 KB static shared memory)
