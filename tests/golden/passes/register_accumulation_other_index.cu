// RUN: register-accumulation
// ----- INPUT
__global__ void prefix(float* C, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < n; ++k) {
        C[i] += C[k];
    }
}
// ----- EXPECTED
// REFUSED: other indices
