// RUN: block-scan-shuffle{coarsen=2}
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
    double s_v[2];
    #pragma unroll
    for (int c = 0; c < 2; ++c) {
        const int tid_c = threadIdx.x + c * ((BS) / 2);
        unsigned i = blockIdx.x * BS + tid_c;
        s_v[c] = i < n ? x[i] : 0.0;
    }
    {
        static_assert((BS) <= 1024 && (BS) % (2 * 32) == 0, "block-scan-shuffle: B");
        __shared__ double s_w[32];
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        #pragma unroll
        for (int c = 0; c < 2; ++c) {
            for (int off = 1; off < 32; off <<= 1) {
                double up = __shfl_up_sync(0xffffffffu, s_v[c], off);
                if (lane >= off) s_v[c] += up;
            }
            if (lane == 31) s_w[c * ((BS) / 2 / 32) + warp] = s_v[c];
        }
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
        #pragma unroll
        for (int c = 0; c < 2; ++c) {
            const int k = c * ((BS) / 2 / 32) + warp;
            if (k > 0) s_v[c] += s_w[k - 1];
        }
    }
    #pragma unroll
    for (int c = 0; c < 2; ++c) {
        const int tid_c = threadIdx.x + c * ((BS) / 2);
        unsigned i = blockIdx.x * BS + tid_c;
        if (i < n)
            y[i] = s_v[c];
    }
}
