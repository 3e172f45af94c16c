// RUN: warp-rows{unroll=4}
// ----- INPUT
__global__ void col_cumsum(const double* A, double* S, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) {
        double acc = 0.0;
        for (int i = 1; i < n; ++i) {
            acc += 2.0 * A[j * n + i];
            S[j * n + i] = acc;
        }
    }
}
// ----- EXPECTED
__global__ void col_cumsum(const double* A, double* S, int n)
{
    int j = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    const unsigned mask = 0xffffffffu;
    if (j < n) {
        double acc = 0.0;
        for (int i0 = 1; i0 < n; i0 += 128) {
            double term[4];
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                const int i = i0 + u * 32 + lane;
                term[u] = i < n ? (double)(2.0 * A[j * n + i]) : (double)0;
            }
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                const int i = i0 + u * 32 + lane;
                double inc = term[u];
                for (int off = 1; off < 32; off *= 2) {
                    double up = __shfl_up_sync(mask, inc, off, 32);
                    if (lane >= off) inc += up;
                }
                if (i < n) S[j * n + i] = acc + inc;
                acc += __shfl_sync(mask, inc, 32 - 1, 32);
            }
        }
        if (lane != 0) return;
    }
}
