// RUN: thread-coarsen{axis=y factor=4}
// ----- INPUT
__global__ void first_neg(const float* a, int* at, int n)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n) return;
    for (int c = 0; c < n; ++c) {
        if (a[row * n + c] < 0.0f) { at[row] = c; return; }
    }
    at[row] = -1;
}
// ----- EXPECTED
// REFUSED: a return inside a loop or switch
