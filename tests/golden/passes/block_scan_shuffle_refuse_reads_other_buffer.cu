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
            v += buf[src][t - off];
        buf[1 - src][t] = v;
        src = 1 - src;
        __syncthreads();
    }
    out[g] = buf[1 - src][t];
}
// ----- EXPECTED
// REFUSED: after the scan buf[1-src][t] may not be the buffer that holds the scan (the loop's last one: [src])
