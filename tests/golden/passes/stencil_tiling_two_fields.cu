// RUN: stencil-tiling
// ----- INPUT
// an FDTD-like update: two fields of different row pitch, each read at two points; hz is updated in place
__global__ void update_hz(const float* ex, const float* ey, float* hz, int nx, int ny)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < nx - 1 && j < ny - 1)
        hz[i * ny + j] = hz[i * ny + j] - 0.7f * (ex[i * (ny + 1) + (j + 1)] - ex[i * (ny + 1) + j] + ey[(i + 1) * ny + j] - ey[i * ny + j]);
}
// ----- EXPECTED
// an FDTD-like update: two fields of different row pitch, each read at two points; hz is updated in place
__global__ void update_hz(const float* ex, const float* ey, float* hz, int nx, int ny)
{
    __shared__ float ex_tile[8][33];
    for (int ly = threadIdx.y; ly < 8; ly += 8)
        for (int lx = threadIdx.x; lx < 33; lx += 32) {
            int gy = (int)blockIdx.y * 8 + ly;
            int gx = (int)blockIdx.x * 32 + lx;
            ex_tile[ly][lx] = (0 < nx - 1 && 0 < ny - 1 && gy >= 0 && gy < nx - 1 && gx >= 0 && gx < ny) ? ex[(ny + 1) * gy + gx] : (float)0;
        }
    __shared__ float ey_tile[9][32];
    for (int ly = threadIdx.y; ly < 9; ly += 8)
        for (int lx = threadIdx.x; lx < 32; lx += 32) {
            int gy = (int)blockIdx.y * 8 + ly;
            int gx = (int)blockIdx.x * 32 + lx;
            ey_tile[ly][lx] = (0 < nx - 1 && 0 < ny - 1 && gy >= 0 && gy < nx && gx >= 0 && gx < ny - 1) ? ey[ny * gy + gx] : (float)0;
        }
    __syncthreads();
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < nx - 1 && j < ny - 1)
        hz[i * ny + j] = hz[i * ny + j] - 0.7f * (ex_tile[threadIdx.y][threadIdx.x + 1] - ex_tile[threadIdx.y][threadIdx.x] + ey_tile[threadIdx.y + 1][threadIdx.x] - ey_tile[threadIdx.y][threadIdx.x]);
}
