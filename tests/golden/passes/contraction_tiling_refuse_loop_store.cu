// RUN: contraction-tiling
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
        z[col] = sum;
    }
    z[col + row * ldz] = z[col + row * ldz] * beta + scale * sum;
}
// ----- EXPECTED
// REFUSED: before the accumulation, the loop body may only load operands into locals (float a = A[..];)
