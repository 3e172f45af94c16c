// RUN: contraction-blocking
// ----- INPUT
__global__ void sgemm_nt(const float* A, int lda, const float* B, int ldb, float* C, int ldc, int k)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    float c = 0.0f;
    for (int i = 0; i < k; ++i)
        c += A[row + i * lda] * B[col + i * ldb];
    C[row + col * ldc] = c;
}
// ----- EXPECTED
// REFUSED: needs a guard bounding the outputs (a launch that covers them exactly keeps its launch: register-blocking)
