// RUN: delinearize-2d
// ----- INPUT
// the divisor is read from memory: no compile-time value or parameter proves the split
__global__ void indirect(const float* a, float* out, const int* dims, int rows)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = t / dims[0];
    int c = t % dims[0];
    if (r < rows)
        out[r * dims[0] + c] = a[r * dims[0] + c];
}
// ----- EXPECTED
// REFUSED: 'int r = t / dims[0];' is not t / D, t % E or (t / D) % E with sizes D and E
