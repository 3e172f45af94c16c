// RUN: triangular-solve-blocking{strip=16 rows=8 rpt=2}
// ----- INPUT
__global__ void trsm(const float* L, float* B, int n, int nrhs)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nrhs)
        return;
    for (int i = 0; i < n; i++) {
        float s = B[i * nrhs + c];
        for (int k = 0; k < i; k++)
            s -= L[i * n + k] * B[k * nrhs + c];
        B[i * nrhs + c] = s / L[i * n + i];
    }
}
// ----- EXPECTED
__global__ void trsm(const float* L, float* B, int n, int nrhs)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = threadIdx.y;
    __shared__ float xs[760][16];
    __shared__ float part[8][16];
    for (int i0 = 0; i0 < n; i0 += 8) {
        int i_row0 = i0 + row * 2;
        if (!(i_row0 < n))
            i_row0 = i0;
        int i_row1 = i0 + row * 2 + 1;
        if (!(i_row1 < n))
            i_row1 = i0;
        if (!(c >= nrhs)) {
            float s0 = B[i_row0 * nrhs + c];
            float s1 = B[i_row1 * nrhs + c];
            const int kw = i0 < 760 ? i0 : 760;
            if ((((size_t)&L[i_row0 * n + 0] | (size_t)&L[i_row1 * n + 0]) & 15) == 0) {
                for (int k = 0; k < kw; k += 4) {
                    const float x0 = xs[k][threadIdx.x];
                    const float x1 = xs[k + 1][threadIdx.x];
                    const float x2 = xs[k + 2][threadIdx.x];
                    const float x3 = xs[k + 3][threadIdx.x];
                    const float4 l0 = *reinterpret_cast<const float4*>(&L[i_row0 * n + k]);
                    const float4 l1 = *reinterpret_cast<const float4*>(&L[i_row1 * n + k]);
                    s0 -= l0.x * x0;
                    s1 -= l1.x * x0;
                    s0 -= l0.y * x1;
                    s1 -= l1.y * x1;
                    s0 -= l0.z * x2;
                    s1 -= l1.z * x2;
                    s0 -= l0.w * x3;
                    s1 -= l1.w * x3;
                }
                for (int k = kw; k < i0; k += 4) {
                    const float x0 = B[k * nrhs + c];
                    const float x1 = B[(k + 1) * nrhs + c];
                    const float x2 = B[(k + 2) * nrhs + c];
                    const float x3 = B[(k + 3) * nrhs + c];
                    const float4 l0 = *reinterpret_cast<const float4*>(&L[i_row0 * n + k]);
                    const float4 l1 = *reinterpret_cast<const float4*>(&L[i_row1 * n + k]);
                    s0 -= l0.x * x0;
                    s1 -= l1.x * x0;
                    s0 -= l0.y * x1;
                    s1 -= l1.y * x1;
                    s0 -= l0.z * x2;
                    s1 -= l1.z * x2;
                    s0 -= l0.w * x3;
                    s1 -= l1.w * x3;
                }
            } else {
                for (int k = 0; k < kw; k++) {
                    const float x0 = xs[k][threadIdx.x];
                    s0 -= L[i_row0 * n + k] * x0;
                    s1 -= L[i_row1 * n + k] * x0;
                }
                for (int k = kw; k < i0; k++) {
                    s0 -= L[i_row0 * n + k] * B[k * nrhs + c];
                    s1 -= L[i_row1 * n + k] * B[k * nrhs + c];
                }
            }
            part[row * 2 + 0][threadIdx.x] = s0;
            part[row * 2 + 1][threadIdx.x] = s1;
        }
        __syncthreads();
        if (row == 0 && (!(c >= nrhs))) {
            float sv[8];
            #pragma unroll
            for (int jj = 0; jj < 8; jj++)
                sv[jj] = part[jj][threadIdx.x];
            #pragma unroll
            for (int jj = 0; jj < 8; jj++) {
                const int i = i0 + jj;
                if (i < n) {
                    float s = sv[jj];
                    float xf;
                    B[i * nrhs + c] = xf = s / L[i * n + i];
                    if (i < 760)
                        xs[i][threadIdx.x] = xf;
                    #pragma unroll
                    for (int ii = jj + 1; ii < 8; ii++)
                        if (i0 + ii < n)
                            sv[ii] -= L[(i0 + ii) * n + i] * xf;
                }
            }
        }
        __syncthreads();
    }
}
