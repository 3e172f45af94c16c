// RUN: delinearize-2d
// ----- INPUT
// t itself indexes the output: the kernel depends on the flat numbering beyond the split
__global__ void flat_out(const float* a, float* out, int rows, int cols)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = t / cols;
    int c = t % cols;
    if (r >= rows) return;
    out[t] = a[c * rows + r];
}
// ----- EXPECTED
// REFUSED: t is used beyond the index split and the guard
