// RUN: register-blocking{tile=32 rx=2 ry=1 tk=8}
// ----- INPUT
__global__ void gemm(const double* A, const double* B, double* C, int M, int N, int K, double alpha)
{
    int row = threadIdx.y + blockIdx.y * blockDim.y;
    int col = threadIdx.x + blockIdx.x * blockDim.x;
    if (row >= M || N <= col) return;
    double sum = 0.0;
    for (int k = 0; k < K; k++) {
        sum += A[row * K + k] * B[k * N + col];
    }
    C[row * N + col] = alpha * sum;
}
// ----- EXPECTED
__global__ void gemm(const double* A, const double* B, double* C, int M, int N, int K, double alpha)
{
    __shared__ double As[32][9];
    __shared__ double Bs[8][32];
    double acc[2];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
    #pragma unroll
    for (int m = 0; m < 2; ++m) {
        int row = row0 + ty + m / 2 * 32;
        int col = col0 + tx + m % 2 * 16;
        acc[m] = 0;
        if (row < M && col < N) {
            double sum = 0.0;
            acc[m] = sum;
        }
    }
    for (int t = 0; t < K; t += 8) {
        for (int e = tid; e < 32 * 8; e += 512) {
            int row = row0 + e / 8;
            int k = t + e % 8;
            As[e / 8][e % 8] = (row < M && k < K) ? A[row * K + k] : (double)0;
        }
        for (int e = tid; e < 8 * 32; e += 512) {
            int k = t + e / 32;
            int col = col0 + e % 32;
            Bs[e / 32][e % 32] = (k < K && col < N) ? B[k * N + col] : (double)0;
        }
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
            double ra[1], rb[2];
            #pragma unroll
            for (int m = 0; m < 1; ++m) ra[m] = As[ty + m * 32][kk];
            #pragma unroll
            for (int m = 0; m < 2; ++m) rb[m] = Bs[kk][tx + m * 16];
            #pragma unroll
            for (int m = 0; m < 2; ++m) acc[m] += ra[m / 2] * rb[m % 2];
        }
        __syncthreads();
    }
    #pragma unroll
    for (int m = 0; m < 2; ++m) {
        int row = row0 + ty + m / 2 * 32;
        int col = col0 + tx + m % 2 * 16;
        if (row < M && col < N) {
            double sum = acc[m];
            C[row * N + col] = alpha * sum;
        }
    }
}
