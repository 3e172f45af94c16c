// RUN: smem-allpairs{tile=64},allpairs-bodies{bodies=1 skip=select}
// ----- INPUT
// the skip as a select: each sum drops its term where j == i (computed, then not added)
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
// the skip as a select: each sum drops its term where j == i (computed, then not added)
__global__ void pot(const float* x, const float* y, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int i_0 = i * 1 + 0;
    const bool live_0 = !(i_0 >= n);
    const bool live = live_0;
    if (!(0 < (n))) return;
    if (!live_0) i_0 = (n) - 1;
    const float x_i_0 = x[i_0];
    const float y_i_0 = y[i_0];
    float p_0 = 0.0f;
    __shared__ float x_s[64];
    __shared__ float y_s[64];
    __shared__ float m_s[64];
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthr = blockDim.x * blockDim.y * blockDim.z;
    for (int t = 0; t < n; t += 64) {
        for (int l = tid; l < 64 && l < n - t; l += nthr) x_s[l] = x[t + l];
        for (int l = tid; l < 64 && l < n - t; l += nthr) y_s[l] = y[t + l];
        for (int l = tid; l < 64 && l < n - t; l += nthr) m_s[l] = m[t + l];
        __syncthreads();
        for (int j = t; j < n && j - t < 64; ++j) {
            {
                float dx = x_s[j - t] - x_i_0, dy = y_s[j - t] - y_i_0;
                p_0 -= (j == i_0) ? 0.0f : (m_s[j - t] / sqrtf(dx * dx + dy * dy + 0.01f));
            }
        }
        __syncthreads();
    }
    if (live) {
        if (live_0) {
            phi[i_0] = p_0;
        }
    }
}
