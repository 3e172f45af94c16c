// RUN: block-scan-shuffle{coarsen=4}
// ----- INPUT
#define BS 128
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
    __syncthreads();
    if (i < n)
        y[i] = s[tid];
}
// ----- EXPECTED
// REFUSED: what follows the scan runs 4 times per thread: no barrier, shuffle, return or jump there
