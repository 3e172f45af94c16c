// RUN: triangular-solve-blocking{strip=32 rows=32 rpt=4}
// ----- INPUT
#define N 512
#define NRHS 8192

__global__ void trsm_cols(const float* L, float* B)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= NRHS)
        return;
    for (int i = 0; i < N; i++) {
        float s = B[i * NRHS + c];
        for (int k = 0; k < i; k++)
            s -= L[i * N + k] * B[k * NRHS + c];
        B[i * NRHS + c] = s / L[i * N + i];
    }
}

// ----- EXPECTED
#define N 512
#define NRHS 8192

__global__ void trsm_cols(const float* L, float* B)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = threadIdx.y;
    __shared__ float xs[352][32];
    __shared__ float part[32][32];
    for (int i0 = 0; i0 < N; i0 += 32) {
        int i_row0 = i0 + row * 4;
        if (!(i_row0 < N))
            i_row0 = i0;
        int i_row1 = i0 + row * 4 + 1;
        if (!(i_row1 < N))
            i_row1 = i0;
        int i_row2 = i0 + row * 4 + 2;
        if (!(i_row2 < N))
            i_row2 = i0;
        int i_row3 = i0 + row * 4 + 3;
        if (!(i_row3 < N))
            i_row3 = i0;
        if (!(c >= NRHS)) {
            float s0 = B[i_row0 * NRHS + c];
            float s1 = B[i_row1 * NRHS + c];
            float s2 = B[i_row2 * NRHS + c];
            float s3 = B[i_row3 * NRHS + c];
            const int kw = i0 < 352 ? i0 : 352;
            if ((((size_t)&L[i_row0 * N + 0] | (size_t)&L[i_row1 * N + 0] | (size_t)&L[i_row2 * N + 0] | (size_t)&L[i_row3 * N + 0]) & 15) == 0) {
                for (int k = 0; k < kw; k += 4) {
                    const float x0 = xs[k][threadIdx.x];
                    const float x1 = xs[k + 1][threadIdx.x];
                    const float x2 = xs[k + 2][threadIdx.x];
                    const float x3 = xs[k + 3][threadIdx.x];
                    const float4 l0 = *reinterpret_cast<const float4*>(&L[i_row0 * N + k]);
                    const float4 l1 = *reinterpret_cast<const float4*>(&L[i_row1 * N + k]);
                    const float4 l2 = *reinterpret_cast<const float4*>(&L[i_row2 * N + k]);
                    const float4 l3 = *reinterpret_cast<const float4*>(&L[i_row3 * N + k]);
                    s0 -= l0.x * x0;
                    s1 -= l1.x * x0;
                    s2 -= l2.x * x0;
                    s3 -= l3.x * x0;
                    s0 -= l0.y * x1;
                    s1 -= l1.y * x1;
                    s2 -= l2.y * x1;
                    s3 -= l3.y * x1;
                    s0 -= l0.z * x2;
                    s1 -= l1.z * x2;
                    s2 -= l2.z * x2;
                    s3 -= l3.z * x2;
                    s0 -= l0.w * x3;
                    s1 -= l1.w * x3;
                    s2 -= l2.w * x3;
                    s3 -= l3.w * x3;
                }
                for (int k = kw; k < i0; k += 4) {
                    const float x0 = B[k * NRHS + c];
                    const float x1 = B[(k + 1) * NRHS + c];
                    const float x2 = B[(k + 2) * NRHS + c];
                    const float x3 = B[(k + 3) * NRHS + c];
                    const float4 l0 = *reinterpret_cast<const float4*>(&L[i_row0 * N + k]);
                    const float4 l1 = *reinterpret_cast<const float4*>(&L[i_row1 * N + k]);
                    const float4 l2 = *reinterpret_cast<const float4*>(&L[i_row2 * N + k]);
                    const float4 l3 = *reinterpret_cast<const float4*>(&L[i_row3 * N + k]);
                    s0 -= l0.x * x0;
                    s1 -= l1.x * x0;
                    s2 -= l2.x * x0;
                    s3 -= l3.x * x0;
                    s0 -= l0.y * x1;
                    s1 -= l1.y * x1;
                    s2 -= l2.y * x1;
                    s3 -= l3.y * x1;
                    s0 -= l0.z * x2;
                    s1 -= l1.z * x2;
                    s2 -= l2.z * x2;
                    s3 -= l3.z * x2;
                    s0 -= l0.w * x3;
                    s1 -= l1.w * x3;
                    s2 -= l2.w * x3;
                    s3 -= l3.w * x3;
                }
            } else {
                for (int k = 0; k < kw; k++) {
                    const float x0 = xs[k][threadIdx.x];
                    s0 -= L[i_row0 * N + k] * x0;
                    s1 -= L[i_row1 * N + k] * x0;
                    s2 -= L[i_row2 * N + k] * x0;
                    s3 -= L[i_row3 * N + k] * x0;
                }
                for (int k = kw; k < i0; k++) {
                    s0 -= L[i_row0 * N + k] * B[k * NRHS + c];
                    s1 -= L[i_row1 * N + k] * B[k * NRHS + c];
                    s2 -= L[i_row2 * N + k] * B[k * NRHS + c];
                    s3 -= L[i_row3 * N + k] * B[k * NRHS + c];
                }
            }
            part[row * 4 + 0][threadIdx.x] = s0;
            part[row * 4 + 1][threadIdx.x] = s1;
            part[row * 4 + 2][threadIdx.x] = s2;
            part[row * 4 + 3][threadIdx.x] = s3;
        }
        __syncthreads();
        if (row == 0 && (!(c >= NRHS))) {
            float sv[32];
            #pragma unroll
            for (int jj = 0; jj < 32; jj++)
                sv[jj] = part[jj][threadIdx.x];
            #pragma unroll
            for (int jj = 0; jj < 32; jj++) {
                const int i = i0 + jj;
                if (i < N) {
                    float s = sv[jj];
                    float xf;
                    B[i * NRHS + c] = xf = s / L[i * N + i];
                    if (i < 352)
                        xs[i][threadIdx.x] = xf;
                    #pragma unroll
                    for (int ii = jj + 1; ii < 32; ii++)
                        if (i0 + ii < N)
                            sv[ii] -= L[(i0 + ii) * N + i] * xf;
                }
            }
        }
        __syncthreads();
    }
}

