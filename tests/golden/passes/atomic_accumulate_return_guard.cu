// RUN: atomic-accumulate
// ----- INPUT
#define SCALE 3u
__global__ void count_big(const float* __restrict__ v, unsigned int* hits, float cut, int n)
{
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i >= n)
        return;
    atomicAdd(hits, (v[i] > cut ? SCALE : 0u));
}
// ----- EXPECTED
#define SCALE 3u
__global__ void count_big(const float* __restrict__ v, unsigned int* hits, float cut, int n)
{
    unsigned int acc = 0;
    for (int i = threadIdx.x + blockIdx.x * blockDim.x; i < (n); i += blockDim.x * gridDim.x)
        acc += (v[i] > cut ? SCALE : 0u);
    {
        __shared__ unsigned int acc_w[32];
        const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        const int size = blockDim.x * blockDim.y * blockDim.z;
        const int here = size - (tid & ~31);
        const unsigned wmask = here >= 32 ? 0xffffffffu : (1u << here) - 1u;
        for (int off = 16; off > 0; off /= 2) {
            unsigned int other = __shfl_down_sync(wmask, acc, off);
            if ((tid & 31) + off < here) acc += other;
        }
        if ((tid & 31) == 0) acc_w[tid / 32] = acc;
        __syncthreads();
        if (tid < 32) {
            const int warps = (size + 31) / 32;
            acc = tid < warps ? acc_w[tid] : (unsigned int)0;
            for (int off = 16; off > 0; off /= 2) {
                unsigned int other = __shfl_down_sync(wmask, acc, off);
                if (tid + off < here) acc += other;
            }
            if (tid == 0) atomicAdd(hits, acc);
        }
    }
}
