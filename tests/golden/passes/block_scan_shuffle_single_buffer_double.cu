// RUN: block-scan-shuffle
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
    if (i < n)
        y[i] = s[tid];
}
// ----- EXPECTED
#define BS 128
__global__ void scan_single(const double* x, double* y, int n)
{
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * BS + tid;
    double s_v = i < n ? x[i] : 0.0;
    {
        static_assert((BS) >= 32 && (BS) <= 1024 && (BS) % 32 == 0, "block-scan-shuffle: B");
        __shared__ double s_w[32];
        const int lane = (tid) % 32, warp = (tid) / 32;
        for (int off = 1; off < 32; off <<= 1) {
            double up = __shfl_up_sync(0xffffffffu, s_v, off);
            if (lane >= off) s_v += up;
        }
        if (lane == 31) s_w[warp] = s_v;
        __syncthreads();
        if (warp == 0) {
            double tot = lane < (BS) / 32 ? s_w[lane] : (double)0;
            for (int off = 1; off < 32; off <<= 1) {
                double up = __shfl_up_sync(0xffffffffu, tot, off);
                if (lane >= off) tot += up;
            }
            s_w[lane] = tot;
        }
        __syncthreads();
        if (warp > 0) s_v += s_w[warp - 1];
    }
    if (i < n)
        y[i] = s_v;
}
