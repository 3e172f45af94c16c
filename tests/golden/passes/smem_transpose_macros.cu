// RUN: smem-transpose{tile=32 rows=8}
// ----- INPUT
#define N 4096
#define SRC(r, c) src[(r) * N + (c)]
#define DST(r, c) dst[(r) * N + (c)]
__global__ void transpose_macro(const float* src, float* dst)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < N && c < N)
        DST(r, c) = SRC(c, r);
}
// ----- EXPECTED
#define N 4096
#define SRC(r, c) src[(r) * N + (c)]
#define DST(r, c) dst[(r) * N + (c)]
__global__ void transpose_macro(const float* src, float* dst)
{
    __shared__ float tile[32][33];
    #pragma unroll
    for (int k = 0; k < 32; k += 8) {
        const int ty = threadIdx.y + k, tx = threadIdx.x;
        int c = blockIdx.x * 32 + ty;
        int r = blockIdx.y * 32 + tx;
        if (r < N && c < N) tile[ty][tx] = src[((c)) * N + ((r))];
    }
    __syncthreads();
    #pragma unroll
    for (int k = 0; k < 32; k += 8) {
        const int ty = threadIdx.y + k, tx = threadIdx.x;
        int c = blockIdx.x * 32 + tx;
        int r = blockIdx.y * 32 + ty;
        if (r < N && c < N) dst[((r)) * N + ((c))] = tile[tx][ty];
    }
}
