// RUN: vector-elementwise-2d
// ----- INPUT
__global__ void row_sums(const float* A, float* s, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n)
        s[i] += A[i * n + j];
}
// ----- EXPECTED
// REFUSED: `s[i]` is written at an index free of j: the threads of a row would race
