// RUN: smem-transpose
// ----- INPUT
#define N 4096
#define SRC(r, c) src[(r) * N + (c)]
#define DST(r, c) dst[(r) * N + (c)]
__global__ void copy_macro(const float* src, float* dst)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < N && c < N)
        DST(r, c) = SRC(r, c);
}
// ----- EXPECTED
// REFUSED: already run along the same axis
