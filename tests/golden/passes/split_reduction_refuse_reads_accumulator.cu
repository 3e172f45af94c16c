// RUN: split-reduction
// ----- INPUT
__global__ void recur(const float* a, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        for (int j = 0; j < n; j++)
            y[i] += a[i * n + j] * y[i];
    }
}
// ----- EXPECTED
// REFUSED: the accumulated term reads the accumulator
