// RUN: stencil-streaming{zchunk=32}
// ----- INPUT
// a 3-D grid through an indexing macro and an early exit: each thread now marches over 32 points of k
#define AT(a, i, j, k) a[((k) * ny + (j)) * nx + (i)]
__global__ void laplace(const float* in, float* out, float h2inv, int nx, int ny, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i < 1 || i >= nx - 1 || j < 1 || j >= ny - 1 || k < 1 || k >= nz - 1)
        return;
    float lap = AT(in, i - 1, j, k) + AT(in, i + 1, j, k) + AT(in, i, j - 1, k) + AT(in, i, j + 1, k);
    AT(out, i, j, k) = h2inv * (lap + AT(in, i, j, k - 1) + AT(in, i, j, k + 1) - 6.0f * AT(in, i, j, k));
}
// ----- EXPECTED
// a 3-D grid through an indexing macro and an early exit: each thread now marches over 32 points of k
#define AT(a, i, j, k) a[((k) * ny + (j)) * nx + (i)]
__global__ void laplace(const float* in, float* out, float h2inv, int nx, int ny, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    __shared__ float in_tile[10][34];
    const bool active = !(i < 1 || i >= nx - 1 || j < 1 || j >= ny - 1);
    const bool own = 1 < ny - 1 && 1 < nx - 1 && ((j >= 0 && j < ny && i >= 1 && i < nx - 1) || (j >= 1 && j < ny - 1 && i >= 0 && i < nx));
    const int zlo = max((int)blockIdx.z * 32, 1);
    const int zhi = min((int)blockIdx.z * 32 + 32, nz - 1);
    float in_zm1 = 0, in_z0 = 0, in_zp1 = 0;
    if (active) in_zm1 = in[nx*ny * (zlo - 1) + nx * j + i];
    if (active || (own && zlo < zhi)) in_z0 = in[nx*ny * (zlo) + nx * j + i];
    for (int k = zlo; k < zhi; k++) {
        if (active || (own && k + 1 < zhi)) in_zp1 = in[nx*ny * (k + 1) + nx * j + i];
        __syncthreads();
        in_tile[threadIdx.y + 1][threadIdx.x + 1] = in_z0;
        for (int ly = threadIdx.y; ly < 10; ly += 8)
            for (int lx = threadIdx.x; lx < 34; lx += 32) {
                if (!(ly < 1 || ly >= 9 || lx < 1 || lx >= 33))
                    continue;
                int gy = (int)blockIdx.y * 8 + ly - 1;
                int gx = (int)blockIdx.x * 32 + lx - 1;
                in_tile[ly][lx] = (1 < ny - 1 && 1 < nx - 1 && ((gy >= 0 && gy < ny && gx >= 1 && gx < nx - 1) || (gy >= 1 && gy < ny - 1 && gx >= 0 && gx < nx))) ? in[nx*ny * k + nx * gy + gx] : (float)0;
            }
        __syncthreads();
        if (active) {
            float lap = in_tile[threadIdx.y + 1][threadIdx.x] + in_tile[threadIdx.y + 1][threadIdx.x + 2] + in_tile[threadIdx.y][threadIdx.x + 1] + in_tile[threadIdx.y + 2][threadIdx.x + 1];
            AT(out, i, j, k) = h2inv * (lap + in_zm1 + in_zp1 - 6.0f * in_z0);
        }
        in_zm1 = in_z0;
        in_z0 = in_zp1;
    }
}
