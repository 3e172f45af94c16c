// RUN: shared-histogram{max_bins=256}
// ----- INPUT
#define NBINS 64
__global__ void weighted_hist(const float* x, const float* w, float* hist, int n, int per_thread)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float wi = w[i];
    if (wi == 0.0f) { return; }
    for (int k = 0; k < per_thread; ++k) {
        int b = (int)(x[i * per_thread + k] * NBINS);
        atomicAdd(hist + b, wi);
    }
}
// ----- EXPECTED
#define NBINS 64
__global__ void weighted_hist(const float* x, const float* w, float* hist, int n, int per_thread)
{
    __shared__ float hist_s[256];
    const int nsh = NBINS < 256 ? NBINS : 256;
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthr = blockDim.x * blockDim.y * blockDim.z;
    for (int k1 = tid; k1 < nsh; k1 += nthr) hist_s[k1] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (!(i >= n)) {
        float wi = w[i];
        if (!(wi == 0.0f)) {
            for (int k = 0; k < per_thread; ++k) {
                int b = (int)(x[i * per_thread + k] * NBINS);
                { const long long bin = (b); if (bin >= 0 && bin < nsh) atomicAdd(&hist_s[bin], wi); else atomicAdd(&hist[bin], wi); }
            }
        }
    }
    __syncthreads();
    for (int k1 = tid; k1 < nsh; k1 += nthr)
        if (hist_s[k1] != 0) atomicAdd(&hist[k1], hist_s[k1]);
}
