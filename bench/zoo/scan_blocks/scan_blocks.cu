// zoo scan: inclusive prefix sum within each block of 1024 elements (Hillis-Steele, double-buffered shared memory)
#include "../zoo.h"

#define N (1 << 24)
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

int main()
{
    float* h = zoo_rand(N, 73);
    float *di, *dout;
    ZOO_CHECK(cudaMalloc(&di, (size_t)N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dout, (size_t)N * sizeof(float)));
    zoo_upload(di, h, N);
    scan_blocks<<<N / B, B>>>(di, dout);
    float* o = zoo_download(dout, N);
    int bad = 0, checked = 0;
    for (int b = 0; b < N / B; b += 331) {
        double s = 0;
        for (int t = 0; t < B; t++) {
            s += h[(size_t)b * B + t];
            if (t % 97 == 0) { bad += !zoo_close(s, o[(size_t)b * B + t], 1e-3); checked++; }
        }
    }
    return zoo_report("scan_blocks", bad, checked, o, N);
}
