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
    g_odata[base + thid] = temp[pin * N + thid];
}
// ----- EXPECTED
// REFUSED: after the scan temp[pin*N+thid] may not be the buffer that holds the scan (the loop's last one: pout*N)
