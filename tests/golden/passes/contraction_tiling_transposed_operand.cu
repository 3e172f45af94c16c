// RUN: contraction-tiling{tile=16 rows=2}
// ----- INPUT
// C = A^T B with A stored k-major (A[k][i]) and an early exit
__global__ void atb(const double* __restrict__ A, const double* __restrict__ B, double* C, int M, int N, int K)
{
    int col = threadIdx.x + blockDim.x * blockIdx.x;
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    double s = 0.0;
    int out = row * N + col;
    for (int k = 0; k < K; ++k) {
        s = s + A[k * M + row] * B[k * N + col];
    }
    C[out] = 2.0 * s;
}
// ----- EXPECTED
// C = A^T B with A stored k-major (A[k][i]) and an early exit
__global__ void atb(const double* __restrict__ A, const double* __restrict__ B, double* C, int M, int N, int K)
{
    __shared__ double As[16][17];
    __shared__ double Bs[16][17];
    double acc[2];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 16;
    for (int r = 0; r < 2; ++r) {
        int row = row0 + ty + r * 8;
        int col = col0 + tx;
        acc[r] = 0;
        if (!(row >= M || col >= N)) {
            double s = 0.0;
            int out = row * N + col;
            acc[r] = s;
        }
    }
    for (int t = 0; t < K; t += 16) {
        for (int e = ty; e < 16; e += 8) {
            { int row = row0 + tx; int k = t + e; As[tx][e] = (row < M && k < K) ? A[k * M + row] : (double)0; }
            { int col = col0 + tx; int k = t + e; Bs[e][tx] = (k < K && col < N) ? B[k * N + col] : (double)0; }
        }
        __syncthreads();
        if (t + 16 <= K) {
            #pragma unroll
            for (int kk = 0; kk < 16; ++kk)
                for (int r = 0; r < 2; ++r)
                    acc[r] = acc[r] + As[ty + r * 8][kk] * Bs[kk][tx];
        } else {
            for (int kk = 0; kk < K - t; ++kk)
                for (int r = 0; r < 2; ++r)
                    acc[r] = acc[r] + As[ty + r * 8][kk] * Bs[kk][tx];
        }
        __syncthreads();
    }
    for (int r = 0; r < 2; ++r) {
        int row = row0 + ty + r * 8;
        int col = col0 + tx;
        if (!(row >= M || col >= N)) {
            int out = row * N + col;
            double s = acc[r];
            C[out] = 2.0 * s;
        }
    }
}
