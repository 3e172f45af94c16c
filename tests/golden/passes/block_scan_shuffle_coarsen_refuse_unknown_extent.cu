// RUN: block-scan-shuffle{coarsen=4}
// ----- INPUT
__global__ void scan_single(const double* x, double* y, int n)
{
    __shared__ double s[BS];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * BS + tid;
    s[tid] = i < n ? x[i] : 0.0;
    __syncthreads();
    for (unsigned d = 1; d < BS; d <<= 1) {
        double add = 0.0;
        if (tid >= d)
            add = s[tid - d];
        __syncthreads();
        s[tid] += add;
        __syncthreads();
    }
    if (i < n)
        y[i] = s[tid];
}
// ----- EXPECTED
// REFUSED: coarsening needs B (BS) a known number up to 1024 with B / 4 a multiple of 32
