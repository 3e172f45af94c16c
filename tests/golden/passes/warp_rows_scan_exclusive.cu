// RUN: warp-rows{lanes=16}
// ----- INPUT
__global__ void row_prefix(const float* in, float* out, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    float run = 0.0f;
    for (int c = 0; c < cols; c++) {
        out[r * cols + c] = run;
        run += in[r * cols + c];
    }
}
// ----- EXPECTED
__global__ void row_prefix(const float* in, float* out, int rows, int cols)
{
    int r = (blockIdx.x * blockDim.x + threadIdx.x) / 16;
    const int lane = threadIdx.x % 16;
    const unsigned mask = 0xffffu << (threadIdx.x % 32u / 16 * 16);
    if (r >= rows)
        return;
    float run = 0.0f;
    for (int c0 = 0; c0 < cols; c0 += 16) {
        const int c = c0 + lane;
        float term = c < cols ? (float)(in[r * cols + c]) : (float)0;
        float inc = term;
        for (int off = 1; off < 16; off *= 2) {
            float up = __shfl_up_sync(mask, inc, off, 16);
            if (lane >= off) inc += up;
        }
        float ex = __shfl_up_sync(mask, inc, 1, 16);
        if (lane == 0) ex = (float)0;
        if (c < cols) out[r * cols + c] = run + ex;
        run += __shfl_sync(mask, inc, 16 - 1, 16);
    }
    if (lane != 0) return;
}
