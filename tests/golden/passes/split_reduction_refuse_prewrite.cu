// RUN: split-reduction
// ----- INPUT
__global__ void selfdot(float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    x[i] = 1.0f;
    float s = 0.0f;
    for (int j = 0; j < n; j++)
        s += x[j] * x[j];
    y[i] = s;
}
// ----- EXPECTED
// REFUSED: the statements before the loop write memory the loop reads
