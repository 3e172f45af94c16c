// RUN: shared-histogram
// ----- INPUT
__global__ void scatter(const int* cell, const float* m, float* rho, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&rho[cell[i]], m[i]);
}
// ----- EXPECTED
__global__ void scatter(const int* cell, const float* m, float* rho, int n)
{
    __shared__ float hist_s[1024];
    const int nsh = 1024;
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthr = blockDim.x * blockDim.y * blockDim.z;
    for (int k = tid; k < nsh; k += nthr) hist_s[k] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { const long long bin = (cell[i]); if (bin >= 0 && bin < nsh) atomicAdd(&hist_s[bin], m[i]); else atomicAdd(&rho[bin], m[i]); }
    __syncthreads();
    for (int k = tid; k < nsh; k += nthr)
        if (hist_s[k] != 0) atomicAdd(&rho[k], hist_s[k]);
}
