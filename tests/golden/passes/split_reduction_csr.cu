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
        if (((reinterpret_cast<unsigned long long>(&vals[(rowptr[row])]) | reinterpret_cast<unsigned long long>(&cols[(rowptr[row])])) & 15) == 0) {
            const int k_end = (rowptr[row]) + ((rowptr[row + 1]) - (rowptr[row])) / 4 * 4;
            for (int k = (rowptr[row]) + 4 * lane; k < k_end; k += 128) {
                const float4 w0 = *reinterpret_cast<const float4*>(&vals[k]);
                const int4 w1 = *reinterpret_cast<const int4*>(&cols[k]);
                part += w0.x * x[w1.x];
                part += w0.y * x[w1.y];
                part += w0.z * x[w1.z];
                part += w0.w * x[w1.w];
            }
            for (int k = k_end + lane; k < (rowptr[row + 1]); k += 32)
                part += vals[k] * x[cols[k]];
        } else {
            for (int k = (rowptr[row]) + lane; k < rowptr[row + 1]; k += 32)
                part += vals[k] * x[cols[k]];
        }
    }
    for (int off = 16; off > 0; off /= 2)
        part += __shfl_down_sync(0xffffffffu, part, off);
    if (lane == 0 && (row < n)) {
        float s = 0.0f;
        s += part;
        y[row] = s;
    }
}
