// RUN: stencil-registers
// ----- INPUT
// a 5-point Jacobi step under an if block, two arrays of different pitch: each gets its own register window
__global__ void jac(const float* u, const float* f, float* v, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x + 1;
    int y = blockIdx.y * blockDim.y + threadIdx.y + 1;
    if (x < nx - 1 && y < ny - 1)
        v[y * nx + x] = 0.25f * (u[y * nx + x - 1] + u[y * nx + x + 1] + u[(y - 1) * nx + x] + u[(y + 1) * nx + x])
                      - f[y * (nx + 2) + x] + 0.5f * f[(y + 1) * (nx + 2) + x];
}
// ----- EXPECTED
// a 5-point Jacobi step under an if block, two arrays of different pitch: each gets its own register window
__global__ void jac(const float* u, const float* f, float* v, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x + 1;
    const int ybase = (blockIdx.y * blockDim.y + threadIdx.y) * 4 + 1;
    float u_w[6][3];
    #pragma unroll
    for (int wr = 0; wr < 6; wr++) {
        #pragma unroll
        for (int wc = 0; wc < 3; wc++) {
            const int gy = ybase + wr - 1;
            const int gx = x + wc - 1;
            u_w[wr][wc] = (1 < ny - 1 && 1 < nx - 1 && ((gy >= 0 && gy < ny - 2 && gx >= 1 && gx < nx - 1) || (gy >= 1 && gy < ny - 1 && gx >= 0 && gx < nx - 2) || (gy >= 1 && gy < ny - 1 && gx >= 2 && gx < nx) || (gy >= 2 && gy < ny && gx >= 1 && gx < nx - 1))) ? u[nx * gy + gx] : (float)0;
        }
    }
    float f_w[5][1];
    #pragma unroll
    for (int wr = 0; wr < 5; wr++) {
        #pragma unroll
        for (int wc = 0; wc < 1; wc++) {
            const int gy = ybase + wr;
            const int gx = x + wc;
            f_w[wr][wc] = (1 < ny - 1 && 1 < nx - 1 && gy >= 1 && gy < ny && gx >= 1 && gx < nx - 1) ? f[(nx + 2) * gy + gx] : (float)0;
        }
    }
    #pragma unroll
    for (int cy = 0; cy < 4; ++cy) {
        int y = ybase + cy;
        if (x < nx - 1 && y < ny - 1)
            v[y * nx + x] = 0.25f * (u_w[cy + 1][0] + u_w[cy + 1][2] + u_w[cy][1] + u_w[cy + 2][1])
                          - f_w[cy][0] + 0.5f * f_w[cy + 1][0];
    }
}
