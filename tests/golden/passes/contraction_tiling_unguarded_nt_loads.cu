// RUN: contraction-tiling{tile=32 rows=4}
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
    __shared__ float As[32][33];
    __shared__ float Bs[32][33];
    float acc[4];
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
    const int tiles = (cols + 31) / 32;
    const int tx = (threadIdx.y * blockDim.x + threadIdx.x) % 32, ty = (threadIdx.y * blockDim.x + threadIdx.x) / 32;
    for (int tile = blockIdx.y * gridDim.x + blockIdx.x; tile < tiles * ((rows + 31) / 32); tile += gridDim.x * gridDim.y) {
        const int row0 = tile / tiles * 32, col0 = tile % tiles * 32;
        for (int r = 0; r < 4; ++r) {
            int row = row0 + ty + r * 8;
            int col = col0 + tx;
            acc[r] = 0;
            if (row < rows && col < cols) {
                const float scale = alpha;
                float sum = 0.0f;
                acc[r] = sum;
            }
        }
        for (int t = 0; t < depth; t += 32) {
            for (int e = ty; e < 32; e += 8) {
                { int row = row0 + tx; int p = t + e; As[tx][e] = (row < rows && p < depth) ? y[row + p * ldy] : (float)0; }
                { int col = col0 + tx; int p = t + e; Bs[e][tx] = (p < depth && col < cols) ? x[col + p * ldx] : (float)0; }
            }
            __syncthreads();
            if (t + 32 <= depth) {
                #pragma unroll
                for (int kk = 0; kk < 32; ++kk)
                    for (int r = 0; r < 4; ++r)
                        acc[r] += Bs[kk][tx] * As[ty + r * 8][kk];
            } else {
                for (int kk = 0; kk < depth - t; ++kk)
                    for (int r = 0; r < 4; ++r)
                        acc[r] += Bs[kk][tx] * As[ty + r * 8][kk];
            }
            __syncthreads();
        }
        for (int r = 0; r < 4; ++r) {
            int row = row0 + ty + r * 8;
            int col = col0 + tx;
            if (row < rows && col < cols) {
                const float scale = alpha;
                float sum = acc[r];
                z[col + row * ldz] = z[col + row * ldz] * beta + scale * sum;
            }
        }
    }
}
