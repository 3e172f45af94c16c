// RUN: block-scan-shuffle{coarsen=4}
// ----- INPUT
#define B 1024
__global__ void scan_blocks(const float* in, float* out)
{
    __shared__ float buf[2][B];
    int t = threadIdx.x;
    int g = blockIdx.x * B + t;
    int src = 0;
    buf[0][t] = in[g];
    __syncthreads();
    for (int off = 1; off < B; off <<= 1) {
        float v = buf[src][t];
        if (t >= off)
            v += buf[src][t - off];
        buf[1 - src][t] = v;
        src = 1 - src;
        __syncthreads();
    }
    out[g] = buf[src][t];
}
// ----- EXPECTED
#define B 1024
__global__ void scan_blocks(const float* in, float* out)
{
    int t = threadIdx.x;
    float buf_v[4];
    #pragma unroll
    for (int c = 0; c < 4; ++c) {
        const int t_c = threadIdx.x + c * ((B) / 4);
        int g = blockIdx.x * B + t_c;
        int src = 0;
        buf_v[c] = in[g];
    }
    {
        static_assert((B) <= 1024 && (B) % (4 * 32) == 0, "block-scan-shuffle: B");
        __shared__ float buf_w[32];
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        #pragma unroll
        for (int c = 0; c < 4; ++c) {
            for (int off1 = 1; off1 < 32; off1 <<= 1) {
                float up = __shfl_up_sync(0xffffffffu, buf_v[c], off1);
                if (lane >= off1) buf_v[c] += up;
            }
            if (lane == 31) buf_w[c * ((B) / 4 / 32) + warp] = buf_v[c];
        }
        __syncthreads();
        if (warp == 0) {
            float tot = lane < (B) / 32 ? buf_w[lane] : (float)0;
            for (int off1 = 1; off1 < 32; off1 <<= 1) {
                float up = __shfl_up_sync(0xffffffffu, tot, off1);
                if (lane >= off1) tot += up;
            }
            buf_w[lane] = tot;
        }
        __syncthreads();
        #pragma unroll
        for (int c = 0; c < 4; ++c) {
            const int k = c * ((B) / 4 / 32) + warp;
            if (k > 0) buf_v[c] += buf_w[k - 1];
        }
    }
    #pragma unroll
    for (int c = 0; c < 4; ++c) {
        const int t_c = threadIdx.x + c * ((B) / 4);
        int g = blockIdx.x * B + t_c;
        int src = 0;
        out[g] = buf_v[c];
    }
}
