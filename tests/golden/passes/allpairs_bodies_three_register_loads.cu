// RUN: smem-allpairs{tile=32},allpairs-bodies{bodies=3}
// ----- INPUT
// one statement as the pair body (no continue: plain blocks), w[i] read once a body into a register, three bodies
__global__ void gram(const float* x, const float* w, float* out, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m)
        return;
    float acc = 0.0f;
    for (int j = 0; j < m; j++)
        acc += x[j] * w[i];
    out[i] = acc + w[i];
}
// ----- EXPECTED
// one statement as the pair body (no continue: plain blocks), w[i] read once a body into a register, three bodies
__global__ void gram(const float* x, const float* w, float* out, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int i_0 = i * 3 + 0, i_1 = i * 3 + 1, i_2 = i * 3 + 2;
    const bool live_0 = !(i_0 >= m), live_1 = !(i_1 >= m), live_2 = !(i_2 >= m);
    const bool live = live_0;
    if (!(0 < (m))) return;
    if (!live_0) i_0 = (m) - 1;
    if (!live_1) i_1 = (m) - 1;
    if (!live_2) i_2 = (m) - 1;
    const float w_i_0 = w[i_0];
    const float w_i_1 = w[i_1];
    const float w_i_2 = w[i_2];
    float acc_0 = 0.0f;
    float acc_1 = 0.0f;
    float acc_2 = 0.0f;
    __shared__ float x_s[32];
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthr = blockDim.x * blockDim.y * blockDim.z;
    for (int t = 0; t < m; t += 32) {
        for (int l = tid; l < 32 && l < m - t; l += nthr) x_s[l] = x[t + l];
        __syncthreads();
        for (int j = t; j < m && j - t < 32; ++j) {
            {
                acc_0 += x_s[j - t] * w_i_0;
            }
            {
                acc_1 += x_s[j - t] * w_i_1;
            }
            {
                acc_2 += x_s[j - t] * w_i_2;
            }
        }
        __syncthreads();
    }
    if (live) {
        if (live_0) {
            out[i_0] = acc_0 + w[i_0];
        }
        if (live_1) {
            out[i_1] = acc_1 + w[i_1];
        }
        if (live_2) {
            out[i_2] = acc_2 + w[i_2];
        }
    }
}
