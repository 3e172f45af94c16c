// RUN: inner-loop-threads,contraction-tiling{tile=16 rows=2}
// ----- INPUT
// one thread per column j1 (1-based), a triangular walk over j2 and a mirrored store
__global__ void covar(int m, int n, const float* data, float* symmat)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x + 1;
    if (j1 <= m) {
        for (int j2 = j1; j2 <= m; j2++) {
            int at = j1 * (m + 1) + j2;
            symmat[at] = 0.0f;
            for (int i = 1; i < n + 1; i++) {
                symmat[at] += data[i * (m + 1) + j1] * data[i * (m + 1) + j2];
            }
            symmat[j2 * (m + 1) + j1] = symmat[at];
        }
    }
}
// ----- EXPECTED
// one thread per column j1 (1-based), a triangular walk over j2 and a mirrored store
__global__ void covar(int m, int n, const float* data, float* symmat)
{
    __shared__ float As[16][17];
    __shared__ float Bs[16][17];
    float acc[2];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 16;
    for (int r = 0; r < 2; ++r) {
        int j2 = row0 + ty + r * 8 + (1);
        int j1 = col0 + tx + (1);
        acc[r] = 0;
        if (j1 <= m && j2 >= j1 && j2 <= m) {
            int at = j1 * (m + 1) + j2;
            symmat[at] = 0.0f;
            acc[r] = symmat[at];
        }
    }
    for (int t = 1; t < n + 1; t += 16) {
        for (int e = ty; e < 16; e += 8) {
            { int j2 = row0 + tx + (1); int i = t + e; As[tx][e] = (j2 < m + 1 && i < n + 1) ? data[i * (m + 1) + j2] : (float)0; }
            { int j1 = col0 + tx + (1); int i = t + e; Bs[e][tx] = (i < n + 1 && j1 < m + 1) ? data[i * (m + 1) + j1] : (float)0; }
        }
        __syncthreads();
        if (t + 16 <= n + 1) {
            #pragma unroll
            for (int kk = 0; kk < 16; ++kk)
                for (int r = 0; r < 2; ++r)
                    acc[r] += Bs[kk][tx] * As[ty + r * 8][kk];
        } else {
            for (int kk = 0; kk < n + 1 - t; ++kk)
                for (int r = 0; r < 2; ++r)
                    acc[r] += Bs[kk][tx] * As[ty + r * 8][kk];
        }
        __syncthreads();
    }
    for (int r = 0; r < 2; ++r) {
        int j2 = row0 + ty + r * 8 + (1);
        int j1 = col0 + tx + (1);
        if (j1 <= m && j2 >= j1 && j2 <= m) {
            int at = j1 * (m + 1) + j2;
            symmat[at] = acc[r];
            symmat[j2 * (m + 1) + j1] = symmat[at];
        }
    }
}
