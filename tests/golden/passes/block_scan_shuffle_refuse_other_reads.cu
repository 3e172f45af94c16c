// RUN: block-scan-shuffle
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
            v += buf[src][t - off] + buf[src][(t + off) % B];
        buf[1 - src][t] = v;
        src = 1 - src;
        __syncthreads();
    }
    out[g] = buf[src][t];
}
// ----- EXPECTED
// REFUSED: the scan loop reads buf at [src][(t+off)%B]: only S[..][t] and S[..][t - off] belong to a scan
