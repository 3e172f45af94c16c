// RUN: smem-allpairs{tile=128 unroll=4}
// ----- INPUT
// the pair loop skips j == i: full tiles of 128 run an unrolled loop of 128 trips (j < t + 128), the last tile the guarded one
__global__ void potential(const float* x, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        sum += m[j] / fabsf(x[i] - x[j]);
    }
    phi[i] = sum;
}
// ----- EXPECTED
// the pair loop skips j == i: full tiles of 128 run an unrolled loop of 128 trips (j < t + 128), the last tile the guarded one
__global__ void potential(const float* x, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = !(i >= n);
    if (!(0 < (n))) return;
    if (!live) i = (n) - 1;
    float sum = 0.0f;
    __shared__ float x_s[128];
    __shared__ float m_s[128];
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthr = blockDim.x * blockDim.y * blockDim.z;
    for (int t = 0; t < n; t += 128) {
        for (int l = tid; l < 128 && l < n - t; l += nthr) x_s[l] = x[t + l];
        for (int l = tid; l < 128 && l < n - t; l += nthr) m_s[l] = m[t + l];
        __syncthreads();
        if (n - t >= 128) {
            #pragma unroll 4
            for (int j = t; j < t + 128; ++j) {
                if (j == i) continue;
                sum += m_s[j - t] / fabsf(x[i] - x_s[j - t]);
            }
        } else {
            for (int j = t; j < n; ++j) {
                if (j == i) continue;
                sum += m_s[j - t] / fabsf(x[i] - x_s[j - t]);
            }
        }
        __syncthreads();
    }
    if (live) {
        phi[i] = sum;
    }
}
