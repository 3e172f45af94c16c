// RUN: stencil-tiling
// ----- INPUT
// an offset mapping (interior points from 1) and an early exit; a 9-point box footprint through an indexing macro
#define IN(r, c) in[(r) * pitch + (c)]
__global__ void box9(const double* in, double* out, int pitch, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x + 1;
    int r = blockIdx.y * blockDim.y + threadIdx.y + 1;
    if (r >= rows - 1 || c >= cols - 1)
        return;
    double s = 0.0;
    for (int a = -1; a <= 1; a++)
        for (int b = -1; b <= 1; b++)
            s += IN(r + a, c + b);
    out[r * pitch + c] = s / 9.0;
}
// ----- EXPECTED
// an offset mapping (interior points from 1) and an early exit; a 9-point box footprint through an indexing macro
#define IN(r, c) in[(r) * pitch + (c)]
__global__ void box9(const double* in, double* out, int pitch, int rows, int cols)
{
    __shared__ double in_tile[10][34];
    for (int ly = threadIdx.y; ly < 10; ly += 8)
        for (int lx = threadIdx.x; lx < 34; lx += 32) {
            int gy = (int)blockIdx.y * 8 + ly;
            int gx = (int)blockIdx.x * 32 + lx;
            in_tile[ly][lx] = (1 < rows - 1 && 1 < cols - 1 && gy >= 0 && gy < rows && gx >= 0 && gx < cols) ? in[pitch * gy + gx] : (double)0;
        }
    __syncthreads();
    int c = blockIdx.x * blockDim.x + threadIdx.x + 1;
    int r = blockIdx.y * blockDim.y + threadIdx.y + 1;
    if (r >= rows - 1 || c >= cols - 1)
        return;
    double s = 0.0;
    for (int a = -1; a <= 1; a++)
        for (int b = -1; b <= 1; b++)
            s += in_tile[threadIdx.y + a + 1][threadIdx.x + b + 1];
    out[r * pitch + c] = s / 9.0;
}
