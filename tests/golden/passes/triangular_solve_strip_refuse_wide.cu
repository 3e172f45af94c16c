// RUN: triangular-solve-blocking{strip=128 rows=64 rpt=8}
// ----- INPUT
#define N 512
#define NRHS 8192

__global__ void trsm_cols(const float* L, float* B)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
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
// REFUSED: a strip of 128 columns with 64-row blocks leaves no room for one row block of solutions in 48 KB of static shared memory (32768 bytes of partial sums)
