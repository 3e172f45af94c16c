// RUN: smem-transpose
// ----- INPUT
__global__ void transpose_scale(const float* A, float* At, float* diag, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) {
        At[j * n + i] = A[i * n + j];
        diag[i] = A[i * n + i];
    }
}
// ----- EXPECTED
// REFUSED: must do only the guarded copy
