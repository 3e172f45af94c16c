// RUN: launch-config{block=32}
// ----- INPUT
__global__ void trsm_cols(const float* L, float* B, int n, int nrhs)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nrhs)
        return;
    for (int i = 0; i < n; i++) {
        float s = B[i * nrhs + c];
        for (int k = 0; k < i; k++)
            s -= L[i * n + k] * B[k * nrhs + c];
        B[i * nrhs + c] = s / L[i * n + i];
    }
}
// ----- EXPECTED
__global__ void trsm_cols(const float* L, float* B, int n, int nrhs)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nrhs)
        return;
    for (int i = 0; i < n; i++) {
        float s = B[i * nrhs + c];
        for (int k = 0; k < i; k++)
            s -= L[i * n + k] * B[k * nrhs + c];
        B[i * nrhs + c] = s / L[i * n + i];
    }
}
