// RUN: launch-config{block=32}
// ----- INPUT
__global__ void block_max(const float* x, float* out, int n)
{
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : -1e30f;
    __syncthreads();
    if (threadIdx.x == 0) {
        float m = s[0];
        for (int t = 1; t < 256; t++) m = fmaxf(m, s[t]);
        out[blockIdx.x] = m;
    }
}
// ----- EXPECTED
// REFUSED: shared memory sized for the current block
