// RUN: triangular-solve-blocking{strip=32 rows=32 rpt=4}
// ----- INPUT
#define N 512
#define NRHS 8192

__global__ void trsm_cols(const float* L, float* B)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= NRHS)
        return;
    for (int i = 0; i < N; i++) {
        double s = B[i * NRHS + c];
        for (int k = 0; k < i; k++)
            s -= L[i * N + k] * B[k * NRHS + c];
        B[i * NRHS + c] = s / L[i * N + i];
    }
}

// ----- EXPECTED
// REFUSED: the strip form keeps solutions in the accumulator's type: double is not B's float
