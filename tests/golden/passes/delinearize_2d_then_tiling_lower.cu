// RUN: delinearize-2d,contraction-tiling{tile=16 rows=2}
// ----- INPUT
// lower triangle of C = alpha * A A^T + beta * C, compile-time sizes, one thread per (i, j) of a flat index
#define N 1000
#define K 300

__global__ void syrk_lower(float alpha, float beta, const float* __restrict__ a, float* __restrict__ c)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int i = idx / N;
    int j = idx % N;
    if (i < N && j <= i) {
        c[i * N + j] *= beta;
        for (int k = 0; k < K; k++)
            c[i * N + j] += alpha * a[i * K + k] * a[j * K + k];
    }
}
// ----- EXPECTED
// lower triangle of C = alpha * A A^T + beta * C, compile-time sizes, one thread per (i, j) of a flat index
#define N 1000
#define K 300

__global__ void syrk_lower(float alpha, float beta, const float* __restrict__ a, float* __restrict__ c)
{
    __shared__ float As[16][17];
    __shared__ float Bs[16][17];
    float acc[2];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 16;
    for (int r = 0; r < 2; ++r) {
        int i = row0 + ty + r * 8;
        int j = col0 + tx;
        acc[r] = 0;
        if (i < N && j <= i && j < N) {
            c[i * N + j] *= beta;
            acc[r] = c[i * N + j];
        }
    }
    for (int t = 0; t < K; t += 16) {
        for (int e = ty; e < 16; e += 8) {
            { int i = row0 + e; int k = t + tx; As[e][tx] = (i < N && k < K) ? a[i * K + k] : (float)0; }
            { int j = col0 + e; int k = t + tx; Bs[tx][e] = (k < K && j < N) ? a[j * K + k] : (float)0; }
        }
        __syncthreads();
        if (t + 16 <= K) {
            #pragma unroll
            for (int kk = 0; kk < 16; ++kk)
                for (int r = 0; r < 2; ++r)
                    acc[r] += alpha * As[ty + r * 8][kk] * Bs[kk][tx];
        } else {
            for (int kk = 0; kk < K - t; ++kk)
                for (int r = 0; r < 2; ++r)
                    acc[r] += alpha * As[ty + r * 8][kk] * Bs[kk][tx];
        }
        __syncthreads();
    }
    for (int r = 0; r < 2; ++r) {
        int i = row0 + ty + r * 8;
        int j = col0 + tx;
        if (i < N && j <= i && j < N) {
            c[i * N + j] = acc[r];
        }
    }
}
