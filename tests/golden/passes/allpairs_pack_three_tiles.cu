// RUN: smem-allpairs{tile=64},allpairs-bodies{bodies=2 skip=subtract},allpairs-pack
// ----- INPUT
// three float tiles: one float4 tile, its w lane 0.0f; the self term subtracted after the packed loop reads the arrays
__global__ void pot(const float* x, const float* y, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float p = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        float dx = x[j] - x[i], dy = y[j] - y[i];
        p -= m[j] / sqrtf(dx * dx + dy * dy + 0.01f);
    }
    phi[i] = p;
}
// ----- EXPECTED
// three float tiles: one float4 tile, its w lane 0.0f; the self term subtracted after the packed loop reads the arrays
__global__ void pot(const float* x, const float* y, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int i_0 = i * 2 + 0, i_1 = i * 2 + 1;
    const bool live_0 = !(i_0 >= n), live_1 = !(i_1 >= n);
    const bool live = live_0;
    if (!(0 < (n))) return;
    if (!live_0) i_0 = (n) - 1;
    if (!live_1) i_1 = (n) - 1;
    const float x_i_0 = x[i_0];
    const float x_i_1 = x[i_1];
    const float y_i_0 = y[i_0];
    const float y_i_1 = y[i_1];
    float p_0 = 0.0f;
    float p_1 = 0.0f;
    __shared__ float4 xym_s[64];
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthr = blockDim.x * blockDim.y * blockDim.z;
    for (int t = 0; t < n; t += 64) {
        for (int l = tid; l < 64 && l < n - t; l += nthr) xym_s[l] = make_float4(x[t + l], y[t + l], m[t + l], 0.0f);
        __syncthreads();
        for (int j = t; j < n && j - t < 64; ++j) {
            {
                float dx = xym_s[j - t].x - x_i_0, dy = xym_s[j - t].y - y_i_0;
                p_0 -= xym_s[j - t].z / sqrtf(dx * dx + dy * dy + 0.01f);
            }
            {
                float dx = xym_s[j - t].x - x_i_1, dy = xym_s[j - t].y - y_i_1;
                p_1 -= xym_s[j - t].z / sqrtf(dx * dx + dy * dy + 0.01f);
            }
        }
        __syncthreads();
    }
    if (live) {
        if (live_0) {
            {
                const int j = i_0;
                float dx = x[j] - x_i_0, dy = y[j] - y_i_0;
                p_0 += m[j] / sqrtf(dx * dx + dy * dy + 0.01f);
            }
            phi[i_0] = p_0;
        }
        if (live_1) {
            {
                const int j = i_1;
                float dx = x[j] - x_i_1, dy = y[j] - y_i_1;
                p_1 += m[j] / sqrtf(dx * dx + dy * dy + 0.01f);
            }
            phi[i_1] = p_1;
        }
    }
}
