// RUN: hoist-invariants
// ----- INPUT
// y[i] is updated in the loop: not an invariant load (register-accumulation's shape)
__global__ void accumulate(const float* a, float* y, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    for (int j = 0; j < m; j++)
        y[i] = y[i] + a[i * m + j];
}
// ----- EXPECTED
// REFUSED: y is not a parameter the kernel only reads
