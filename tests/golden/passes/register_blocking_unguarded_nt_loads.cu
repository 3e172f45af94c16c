// RUN: register-blocking{tile=64 rx=4 ry=4}
// ----- INPUT
// a column-major product of an N-by-K and the transpose of an M-by-K matrix, one thread per output and no guard:
// the launch covers the outputs exactly; the operands are loaded into locals first, the leading dimensions are parameters
__global__ void gemm_nt_unguarded(const float *x, int ldx, const float *y, int ldy, float *z, int ldz, int depth,
                                  float alpha, float beta)
{
    const float scale = alpha;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    for (int p = 0; p < depth; ++p) {
        float u = x[col + p * ldx];
        float v = y[row + p * ldy];
        sum += u * v;
    }
    z[col + row * ldz] = z[col + row * ldz] * beta + scale * sum;
}
// ----- EXPECTED
// a column-major product of an N-by-K and the transpose of an M-by-K matrix, one thread per output and no guard:
// the launch covers the outputs exactly; the operands are loaded into locals first, the leading dimensions are parameters
__global__ void gemm_nt_unguarded(const float *x, int ldx, const float *y, int ldy, float *z, int ldz, int depth,
                                  float alpha, float beta)
{
    __shared__ float As[64][17];
    __shared__ float Bs[16][64];
    float acc[16];
    if (blockDim.x * blockDim.y != 256 || blockDim.z != 1) {  // a block this variant was not written for
        const float scale = alpha;
        int col = blockIdx.x * blockDim.x + threadIdx.x;
        float sum = 0.0f;
        int row = blockIdx.y * blockDim.y + threadIdx.y;
        for (int p = 0; p < depth; ++p) {
            float u = x[col + p * ldx];
            float v = y[row + p * ldy];
            sum += u * v;
        }
        z[col + row * ldz] = z[col + row * ldz] * beta + scale * sum;
        return;
    }
    const int cols = gridDim.x * blockDim.x, rows = gridDim.y * blockDim.y;  // the outputs the launch covers
    const int tiles = (cols + 63) / 64;
    const int tx = (threadIdx.y * blockDim.x + threadIdx.x) % 16, ty = (threadIdx.y * blockDim.x + threadIdx.x) / 16, tid = (threadIdx.y * blockDim.x + threadIdx.x);
    for (int tile = blockIdx.y * gridDim.x + blockIdx.x; tile < tiles * ((rows + 63) / 64); tile += gridDim.x * gridDim.y) {
        const int row0 = tile / tiles * 64, col0 = tile % tiles * 64;
        #pragma unroll
        for (int m = 0; m < 16; ++m) {
            int row = row0 + ty + m / 4 * 16;
            int col = col0 + tx + m % 4 * 16;
            acc[m] = 0;
            if (row < rows && col < cols) {
                const float scale = alpha;
                float sum = 0.0f;
                acc[m] = sum;
            }
        }
        for (int t = 0; t < depth; t += 16) {
            for (int e = tid; e < 64 * 16; e += 256) {
                int row = row0 + e % 64;
                int p = t + e / 64;
                As[e % 64][e / 64] = (row < rows && p < depth) ? y[row + p * ldy] : (float)0;
            }
            for (int e = tid; e < 16 * 64; e += 256) {
                int p = t + e / 64;
                int col = col0 + e % 64;
                Bs[e / 64][e % 64] = (p < depth && col < cols) ? x[col + p * ldx] : (float)0;
            }
            __syncthreads();
            #pragma unroll
            for (int kk = 0; kk < 16; ++kk) {
                float ra[4], rb[4];
                #pragma unroll
                for (int m = 0; m < 4; ++m) ra[m] = As[ty + m * 16][kk];
                #pragma unroll
                for (int m = 0; m < 4; ++m) rb[m] = Bs[kk][tx + m * 16];
                #pragma unroll
                for (int m = 0; m < 16; ++m) acc[m] += ra[m / 4] * rb[m % 4];
            }
            __syncthreads();
        }
        #pragma unroll
        for (int m = 0; m < 16; ++m) {
            int row = row0 + ty + m / 4 * 16;
            int col = col0 + tx + m % 4 * 16;
            if (row < rows && col < cols) {
                float sum = acc[m];
                const float scale = alpha;
                z[col + row * ldz] = z[col + row * ldz] * beta + scale * sum;
            }
        }
    }
}
