// RUN: delinearize-2d
// ----- INPUT
// the address of t is taken: what the pointer reaches cannot be spelled by the digits
__device__ float at(const float* a, const int* p) { return a[*p]; }
__global__ void flat_addr(const float* a, float* out, int rows, int cols)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = t / cols, c = t % cols;
    if (r >= rows) return;
    out[r * cols + c] = at(a, &t);
}
// ----- EXPECTED
// REFUSED: the address of t is taken
