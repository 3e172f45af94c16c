// RUN: stencil-streaming{zchunk=8}
// ----- INPUT
// a boundary copy in an early exit on a 3-D grid: the chunk's copies run in a loop of their own, then the march
__global__ void edge(const float* u, float* v, int nx, int ny, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= nx || j >= ny || k >= nz) return;
    if (i == 0 || k == 0 || i == nx - 1 || k == nz - 1) {
        v[(k * ny + j) * nx + i] = u[(k * ny + j) * nx + i];
        return;
    }
    v[(k * ny + j) * nx + i] = 0.5f * u[(k * ny + j) * nx + i] + u[(k * ny + j) * nx + i - 1] + u[(k * ny + j) * nx + i + 1] +
                               u[((k - 1) * ny + j) * nx + i] + u[((k + 1) * ny + j) * nx + i];
}
// ----- EXPECTED
// a boundary copy in an early exit on a 3-D grid: the chunk's copies run in a loop of their own, then the march
__global__ void edge(const float* u, float* v, int nx, int ny, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    __shared__ float u_tile[8][34];
    for (int k = (int)blockIdx.z * 8; k < (int)blockIdx.z * 8 + 8; k++) {
        if (!(i >= nx || j >= ny || k >= nz)) {
            if (i == 0 || k == 0 || i == nx - 1 || k == nz - 1) {
                v[(k * ny + j) * nx + i] = u[(k * ny + j) * nx + i];
            }
        }
    }
    const bool active = !(i >= nx || j >= ny) && !(i == 0 || i == nx - 1);
    const bool own = 0 < ny && 1 < nx && 1 < nx - 1 && j >= 0 && j < ny && i >= 0 && i < nx;
    const int zlo = max((int)blockIdx.z * 8, 1);
    const int zhi = min(min((int)blockIdx.z * 8 + 8, nz), nz - 1);
    float u_zm1 = 0, u_z0 = 0, u_zp1 = 0;
    if (active) u_zm1 = u[nx*ny * (zlo - 1) + nx * j + i];
    if (active || (own && zlo < zhi)) u_z0 = u[nx*ny * (zlo) + nx * j + i];
    for (int k = zlo; k < zhi; k++) {
        if (active || (own && k + 1 < zhi)) u_zp1 = u[nx*ny * (k + 1) + nx * j + i];
        __syncthreads();
        u_tile[threadIdx.y][threadIdx.x + 1] = u_z0;
        for (int ly = threadIdx.y; ly < 8; ly += 8)
            for (int lx = threadIdx.x; lx < 34; lx += 32) {
                if (!(ly < 0 || ly >= 8 || lx < 1 || lx >= 33))
                    continue;
                int gy = (int)blockIdx.y * 8 + ly;
                int gx = (int)blockIdx.x * 32 + lx - 1;
                u_tile[ly][lx] = (0 < ny && 1 < nx && 1 < nx - 1 && gy >= 0 && gy < ny && gx >= 0 && gx < nx) ? u[nx*ny * k + nx * gy + gx] : (float)0;
            }
        __syncthreads();
        if (active) {
            v[(k * ny + j) * nx + i] = 0.5f * u_z0 + u_tile[threadIdx.y][threadIdx.x] + u_tile[threadIdx.y][threadIdx.x + 2] +
                                       u_zm1 + u_zp1;
        }
        u_zm1 = u_z0;
        u_z0 = u_zp1;
    }
}
