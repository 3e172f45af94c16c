// RUN: smem-allpairs{tile=32},allpairs-bodies{bodies=2}
// ----- INPUT
// a local declared before the loop and written after it: one a body (sequential copies would carry body 0's value into body 1)
__global__ void pot(const float* x, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float p = 0.0f;
    float total = 1.0f;
    for (int j = 0; j < n; ++j)
        p += x[j] * x[i];
    total += p;
    phi[i] = total;
}
// ----- EXPECTED
// a local declared before the loop and written after it: one a body (sequential copies would carry body 0's value into body 1)
__global__ void pot(const float* x, float* phi, int n)
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
    float p_0 = 0.0f;
    float p_1 = 0.0f;
    float total_0 = 1.0f;
    float total_1 = 1.0f;
    __shared__ float x_s[32];
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthr = blockDim.x * blockDim.y * blockDim.z;
    for (int t = 0; t < n; t += 32) {
        for (int l = tid; l < 32 && l < n - t; l += nthr) x_s[l] = x[t + l];
        __syncthreads();
        for (int j = t; j < n && j - t < 32; ++j) {
            {
                p_0 += x_s[j - t] * x_i_0;
            }
            {
                p_1 += x_s[j - t] * x_i_1;
            }
        }
        __syncthreads();
    }
    if (live) {
        if (live_0) {
            total_0 += p_0;
            phi[i_0] = total_0;
        }
        if (live_1) {
            total_1 += p_1;
            phi[i_1] = total_1;
        }
    }
}
