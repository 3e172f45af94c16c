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
        const int k_head = (rowptr[row]) + (int)((16u - (reinterpret_cast<unsigned long long>(&vals[(rowptr[row])]) & 15u)) & 15u) / 4;
        if (((reinterpret_cast<unsigned long long>(&vals[(k_head)]) | reinterpret_cast<unsigned long long>(&cols[(k_head)])) & 15) == 0) {
            for (int k = (rowptr[row]) + lane; k < k_head && k < (rowptr[row + 1]); k += 32)
                part += vals[k] * x[cols[k]];
            const int k_end = (k_head) + ((rowptr[row + 1]) - (k_head)) / 4 * 4;
            for (int k = (k_head) + 4 * lane; k < k_end; k += 128) {
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
