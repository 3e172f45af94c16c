// RUN: register-accumulation
// ----- INPUT
__global__ void twice(const float* A, float* C, float* D, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < n; ++k) {
        C[i] += A[i * n + k];
        D[k] = 0.0f;
    }
}
// ----- EXPECTED
// REFUSED: may alias C
