// RUN: warp-rows
// ----- INPUT
__global__ void spmv(const int* rowptr, const int* cols, const float* vals, const float* x, float* y, int nrows)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < nrows) {
        float dot = 0.0f;
        for (int k = rowptr[row]; k < rowptr[row + 1]; k++)
            dot += vals[k] * x[cols[k]];
        y[row] = dot;
    }
}
// ----- EXPECTED
__global__ void spmv(const int* rowptr, const int* cols, const float* vals, const float* x, float* y, int nrows)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    const unsigned mask = 0xffffffffu;
    if (row < nrows) {
        float dot = 0.0f;
        for (int k = rowptr[row] + lane; k < rowptr[row + 1]; k += 32)
            dot += vals[k] * x[cols[k]];
        for (int off = 32 / 2; off > 0; off /= 2)
            dot += __shfl_down_sync(mask, dot, off, 32);
        if (lane != 0) return;
        y[row] = dot;
    }
}
