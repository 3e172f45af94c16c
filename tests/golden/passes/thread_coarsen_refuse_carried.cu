// RUN: thread-coarsen{axis=y factor=4}
// ----- INPUT
__global__ void rowsum(const float* a, float* s, int n)
{
    float acc = 0.0f;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n) return;
    for (int c = 0; c < n; ++c) acc += a[row * n + c];
    s[row] = acc;
}
// ----- EXPECTED
// REFUSED: `acc` is declared before the index and changed after it
