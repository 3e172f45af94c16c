// RUN: shared-histogram{copies=4 max_bins=512}
// KERNEL: histo_param
// ----- INPUT
__global__ void histo_param(const int* keys, unsigned int* hist, int n, int nbins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&hist[keys[i] % nbins], 1u);
}
// ----- EXPECTED
__global__ void histo_param(const int* keys, unsigned int* hist, int n, int nbins)
{
    __shared__ unsigned int hist_s[512 * 4];
    const int nsh = nbins < 512 ? nbins : 512;
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthr = blockDim.x * blockDim.y * blockDim.z;
    const int cp = tid & 3;
    for (int k = tid; k < nsh * 4; k += nthr) hist_s[k] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (!(i >= n)) {
        { const long long bin = (keys[i] % nbins); if (bin >= 0 && bin < nsh) atomicAdd(&hist_s[bin * 4 + cp], 1u); else atomicAdd(&hist[bin], 1u); }
    }
    __syncthreads();
    for (int k = tid; k < nsh; k += nthr)
    {
        unsigned int sum = 0;
        for (int c = 0; c < 4; ++c) sum += hist_s[k * 4 + ((c + k) & 3)];
        if (sum != 0) atomicAdd(&hist[k], sum);
    }
}
