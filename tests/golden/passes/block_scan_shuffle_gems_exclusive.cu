// RUN: block-scan-shuffle
// ----- INPUT
#define N 256
__global__ void scan_gems(const float* g_idata, float* g_odata)
{
    __shared__ float temp[2 * N];
    int thid = threadIdx.x;
    int base = blockIdx.x * N;
    int pout = 0, pin = 1;
    temp[pout * N + thid] = thid > 0 ? g_idata[base + thid - 1] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < N; offset *= 2) {
        pout = 1 - pout;
        pin = 1 - pout;
        if (thid >= offset)
            temp[pout * N + thid] = temp[pin * N + thid] + temp[pin * N + thid - offset];
        else
            temp[pout * N + thid] = temp[pin * N + thid];
        __syncthreads();
    }
    g_odata[base + thid] = temp[pout * N + thid];
}
// ----- EXPECTED
#define N 256
__global__ void scan_gems(const float* g_idata, float* g_odata)
{
    int thid = threadIdx.x;
    int base = blockIdx.x * N;
    int pout = 0, pin = 1;
    float temp_v = thid > 0 ? g_idata[base + thid - 1] : 0.0f;
    {
        static_assert((N) >= 32 && (N) <= 1024 && (N) % 32 == 0, "block-scan-shuffle: B");
        __shared__ float temp_w[32];
        const int lane = (thid) % 32, warp = (thid) / 32;
        for (int off = 1; off < 32; off <<= 1) {
            float up = __shfl_up_sync(0xffffffffu, temp_v, off);
            if (lane >= off) temp_v += up;
        }
        if (lane == 31) temp_w[warp] = temp_v;
        __syncthreads();
        if (warp == 0) {
            float tot = lane < (N) / 32 ? temp_w[lane] : (float)0;
            for (int off = 1; off < 32; off <<= 1) {
                float up = __shfl_up_sync(0xffffffffu, tot, off);
                if (lane >= off) tot += up;
            }
            temp_w[lane] = tot;
        }
        __syncthreads();
        if (warp > 0) temp_v += temp_w[warp - 1];
    }
    g_odata[base + thid] = temp_v;
}
