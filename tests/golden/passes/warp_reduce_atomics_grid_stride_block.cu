// RUN: warp-reduce-atomics
// ----- INPUT
__global__ void count_hits(const float* v, unsigned int* hits, float cut, int n)
{
    unsigned int mine = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        mine += v[i] > cut;
    atomicAdd(hits, mine);
}
// ----- EXPECTED
__global__ void count_hits(const float* v, unsigned int* hits, float cut, int n)
{
    unsigned int wsum = 0;
    unsigned int mine = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        mine += v[i] > cut;
    wsum += (mine);
    {
        __shared__ unsigned int wsum_w[32];
        const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        const int size = blockDim.x * blockDim.y * blockDim.z;
        const int here = size - (tid & ~31);
        const unsigned wmask = here >= 32 ? 0xffffffffu : (1u << here) - 1u;
        for (int off = 16; off > 0; off /= 2) {
            unsigned int other = __shfl_down_sync(wmask, wsum, off);
            if ((tid & 31) + off < here) wsum += other;
        }
        if ((tid & 31) == 0) wsum_w[tid / 32] = wsum;
        __syncthreads();
        if (tid < 32) {
            const int warps = (size + 31) / 32;
            wsum = tid < warps ? wsum_w[tid] : (unsigned int)0;
            for (int off = 16; off > 0; off /= 2) {
                unsigned int other = __shfl_down_sync(wmask, wsum, off);
                if (tid + off < here) wsum += other;
            }
            if (tid == 0) atomicAdd(hits, wsum);
        }
    }
}
