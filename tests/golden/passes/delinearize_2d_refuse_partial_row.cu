// RUN: delinearize-2d
// ----- INPUT
// the flat bound is not a whole number of rows: the last partial row has no 2-D equivalent
__global__ void partial(const float* a, float* out, int total, int cols)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = t / cols;
    int c = t % cols;
    if (t < total)
        out[r * cols + c] = a[r * cols + c] + 1.0f;
}
// ----- EXPECTED
// REFUSED: the guard term 't < total' is not t < (a multiple of cols)
