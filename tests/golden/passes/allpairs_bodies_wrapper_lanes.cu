// RUN: smem-allpairs{tile=64},allpairs-bodies{bodies=2},allpairs-lanes{lanes=4}
// ----- INPUT
// the loop inside the guard `if (i < n) { ... }`: two locals read at i, declared once a body; q[j] and x[j] tiled
__global__ void coulomb(const float* x, const float* q, float* e, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xi = x[i], qi = q[i];
        float s = 0.0f;
        for (int j = 0; j < n; ++j) {
            if (j == i) continue;
            s += qi * q[j] / fabsf(xi - x[j]);
        }
        e[i] = s;
    }
}
// ----- EXPECTED
// the loop inside the guard `if (i < n) { ... }`: two locals read at i, declared once a body; q[j] and x[j] tiled
__global__ void coulomb(const float* x, const float* q, float* e, int n)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) / 4;
    const int sub = threadIdx.x % 4;
    int i_0 = i * 2 + 0, i_1 = i * 2 + 1;
    const bool live_0 = (i_0 < n), live_1 = (i_1 < n);
    const bool live = live_0;
    if (!(0 < (n))) return;
    if (!live_0) i_0 = (n) - 1;
    if (!live_1) i_1 = (n) - 1;
    {
        float xi_0 = x[i_0], qi_0 = q[i_0];
        float xi_1 = x[i_1], qi_1 = q[i_1];
        float s_0 = 0.0f;
        float s_1 = 0.0f;
        __shared__ float x_s[64];
        __shared__ float q_s[64];
        const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        const int nthr = blockDim.x * blockDim.y * blockDim.z;
        for (int t = 0; t < n; t += 64) {
            for (int l = tid; l < 64 && l < n - t; l += nthr) x_s[l] = x[t + l];
            for (int l = tid; l < 64 && l < n - t; l += nthr) q_s[l] = q[t + l];
            __syncthreads();
            for (int j = t + sub; j < n && j - t < 64; j += 4) {
                do {
                    if (j == i_0) continue;
                    s_0 += qi_0 * q_s[j - t] / fabsf(xi_0 - x_s[j - t]);
                } while (0);
                do {
                    if (j == i_1) continue;
                    s_1 += qi_1 * q_s[j - t] / fabsf(xi_1 - x_s[j - t]);
                } while (0);
            }
            __syncthreads();
        }
        for (int off = 4 / 2; off > 0; off /= 2)
            s_0 += __shfl_down_sync(0xffffffffu, s_0, off, 4);
        for (int off = 4 / 2; off > 0; off /= 2)
            s_1 += __shfl_down_sync(0xffffffffu, s_1, off, 4);
        if (live && sub == 0) {
            if (live_0) {
                e[i_0] = s_0;
            }
            if (live_1) {
                e[i_1] = s_1;
            }
        }
    }
}
