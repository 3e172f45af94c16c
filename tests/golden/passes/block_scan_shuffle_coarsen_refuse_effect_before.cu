// RUN: block-scan-shuffle{coarsen=4}
// ----- INPUT
#define BS 128
__global__ void scan_single(const double* x, double* y, int n, int* ticket)
{
    __shared__ double s[BS];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * BS + tid;
    int mine = atomicAdd(ticket, 1);
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
// REFUSED: before the scan's load only declarations with values may compute (they run 4 times per thread)
