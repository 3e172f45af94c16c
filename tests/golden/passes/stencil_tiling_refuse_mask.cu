// RUN: stencil-tiling
// ----- INPUT
// a data-dependent condition around the reads: which points are read is not known from the indices
__global__ void masked(const float* in, const int* mask, float* out, int n)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && x < n - 1 && y < n) {
        if (mask[y * n + x] != 0)
            out[y * n + x] = in[y * n + x - 1] + in[y * n + x + 1];
    }
}
// ----- EXPECTED
// REFUSED: is not a set of bounds
