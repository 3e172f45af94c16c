// RUN: contraction-tiling{tile=16 rows=4}
// ----- INPUT
#define AM(r, c) a[(r) * m + (c)]
#define BM(r, c) b[(r) * m + (c)]
#define CM(r, s) c[(r) * n + (s)]
// a rank-2k update indexed through macros: four operands, two per side
__global__ void syr2k(int n, int m, float alpha, float beta, const float* a, const float* b, float* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) {
        CM(i, j) *= beta;
        for (int k = 0; k < m; k++)
            CM(i, j) += alpha * AM(j, k) * BM(i, k) + alpha * BM(j, k) * AM(i, k);
    }
}
// ----- EXPECTED
#define AM(r, c) a[(r) * m + (c)]
#define BM(r, c) b[(r) * m + (c)]
#define CM(r, s) c[(r) * n + (s)]
// a rank-2k update indexed through macros: four operands, two per side
__global__ void syr2k(int n, int m, float alpha, float beta, const float* a, const float* b, float* c)
{
    __shared__ float As[16][17];
    __shared__ float As2[16][17];
    __shared__ float Bs[16][17];
    __shared__ float Bs2[16][17];
    float acc[4];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 16;
    for (int r = 0; r < 4; ++r) {
        int i = row0 + ty + r * 4;
        int j = col0 + tx;
        acc[r] = 0;
        if (i < n && j < n) {
            CM(i, j) *= beta;
            acc[r] = CM(i, j);
        }
    }
    for (int t = 0; t < m; t += 16) {
        for (int e = ty; e < 16; e += 4) {
            { int i = row0 + e; int k = t + tx; As[e][tx] = (i < n && k < m) ? BM(i, k) : (float)0; }
            { int i = row0 + e; int k = t + tx; As2[e][tx] = (i < n && k < m) ? AM(i, k) : (float)0; }
            { int j = col0 + e; int k = t + tx; Bs[tx][e] = (k < m && j < n) ? AM(j, k) : (float)0; }
            { int j = col0 + e; int k = t + tx; Bs2[tx][e] = (k < m && j < n) ? BM(j, k) : (float)0; }
        }
        __syncthreads();
        if (t + 16 <= m) {
            #pragma unroll
            for (int kk = 0; kk < 16; ++kk)
                for (int r = 0; r < 4; ++r)
                    acc[r] += alpha * Bs[kk][tx] * As[ty + r * 4][kk] + alpha * Bs2[kk][tx] * As2[ty + r * 4][kk];
        } else {
            for (int kk = 0; kk < m - t; ++kk)
                for (int r = 0; r < 4; ++r)
                    acc[r] += alpha * Bs[kk][tx] * As[ty + r * 4][kk] + alpha * Bs2[kk][tx] * As2[ty + r * 4][kk];
        }
        __syncthreads();
    }
    for (int r = 0; r < 4; ++r) {
        int i = row0 + ty + r * 4;
        int j = col0 + tx;
        if (i < n && j < n) {
            CM(i, j) = acc[r];
        }
    }
}
