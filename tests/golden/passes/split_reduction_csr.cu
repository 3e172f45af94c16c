// RUN: split-reduction
// ----- INPUT
__global__ void spmv_csr(const int* rowptr, const int* cols, const float* vals, const float* x, float* y, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n) {
        float s = 0.0f;
        for (int k = rowptr[row]; k < rowptr[row + 1]; k++)
            s += vals[k] * x[cols[k]];
        y[row] = s;
    }
}
// ----- EXPECTED
__global__ void spmv_csr(const int* rowptr, const int* cols, const float* vals, const float* x, float* y, int n)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    float part = 0;
    if (row < n) {
        for (int k = rowptr[row] + lane; k < rowptr[row + 1]; k += 32)
            part += vals[k] * x[cols[k]];
    }
    for (int off = 16; off > 0; off /= 2)
        part += __shfl_down_sync(0xffffffffu, part, off);
    if (lane == 0 && (row < n)) {
        float s = 0.0f;
        s += part;
        y[row] = s;
    }
}
