// RUN: vector-elementwise-2d
// ----- INPUT
__global__ void ger_count(float* A, const float* x, const float* y, int* hits, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    hits[i] = 1;
    if (i < n && j < n)
        A[i * n + j] += x[i] * y[j];
}
// ----- EXPECTED
// REFUSED: `hits[i] = 1;` runs once per thread: with four elements a thread it would run a quarter as often
