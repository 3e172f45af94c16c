// RUN: warp-reduce-atomics{scope=warp}
// ----- INPUT
__global__ void dot(const double* x, const double* y, double* result, int n)
{
    double part = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        part += x[i] * y[i];
    atomicAdd(result, part);
}
// ----- EXPECTED
__global__ void dot(const double* x, const double* y, double* result, int n)
{
    double wsum = 0;
    double part = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        part += x[i] * y[i];
    wsum += (part);
    {
        const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        const int here = blockDim.x * blockDim.y * blockDim.z - (tid & ~31);
        const unsigned wmask = here >= 32 ? 0xffffffffu : (1u << here) - 1u;
        for (int off = 16; off > 0; off /= 2) {
            double other = __shfl_down_sync(wmask, wsum, off);
            if ((tid & 31) + off < here) wsum += other;
        }
        if ((tid & 31) == 0) atomicAdd(result, wsum);
    }
}
