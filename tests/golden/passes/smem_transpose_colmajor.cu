// RUN: smem-transpose{tile=16}
// ----- INPUT
__global__ void to_rowmajor(const double* __restrict__ in, double* __restrict__ out, int rows, int cols)
{
    const int c = threadIdx.x + blockIdx.x * blockDim.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= rows || c >= cols) return;
    out[r * cols + c] = in[c * rows + r];
}
// ----- EXPECTED
__global__ void to_rowmajor(const double* __restrict__ in, double* __restrict__ out, int rows, int cols)
{
    __shared__ double tile[16][17];
    for (int ty = threadIdx.y; ty < 16; ty += blockDim.y)
        for (int tx = threadIdx.x; tx < 16; tx += blockDim.x) {
            int c = blockIdx.x * 16 + ty;
            int r = blockIdx.y * 16 + tx;
            if (!(r >= rows || c >= cols)) tile[ty][tx] = in[c * rows + r];
        }
    __syncthreads();
    for (int ty = threadIdx.y; ty < 16; ty += blockDim.y)
        for (int tx = threadIdx.x; tx < 16; tx += blockDim.x) {
            int c = blockIdx.x * 16 + tx;
            int r = blockIdx.y * 16 + ty;
            if (!(r >= rows || c >= cols)) out[r * cols + c] = tile[tx][ty];
        }
}
