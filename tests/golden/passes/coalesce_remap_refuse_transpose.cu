// RUN: coalesce-remap
// ----- INPUT
// a transpose: one side strided whichever axis walks the row, so swapping gains nothing
__global__ void transpose(const float* a, float* out, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < n && col < n)
        out[col * n + row] = a[row * n + col];
}
// ----- EXPECTED
// REFUSED: threadIdx.x (row) does not walk the slow index: swapping x and y coalesces no more accesses (1 against 1, weighted by loop depth)
