// RUN: atomic-accumulate
// ----- INPUT
__global__ void matches(const int* a, const int* b, int* count, int n)
{
    int mine = 0;
    for (int k = threadIdx.x + blockIdx.x * blockDim.x; k < n; k += gridDim.x * blockDim.x)
        mine += (a[k] == b[k]);
    atomicAdd(count, mine);
}
// ----- EXPECTED
__global__ void matches(const int* a, const int* b, int* count, int n)
{
    int mine = 0;
    int k0 = threadIdx.x + blockIdx.x * blockDim.x;
    if (((reinterpret_cast<unsigned long long>(a) | reinterpret_cast<unsigned long long>(b)) & 15) == 0) {
        for (int q = k0; q < (n) / 4; q += blockDim.x * gridDim.x) {
            const int4 a_4 = reinterpret_cast<const int4*>(a)[q];
            const int4 b_4 = reinterpret_cast<const int4*>(b)[q];
            mine += (a_4.x == b_4.x);
            mine += (a_4.y == b_4.y);
            mine += (a_4.z == b_4.z);
            mine += (a_4.w == b_4.w);
        }
        k0 += (n) / 4 * 4;
    }
    for (int k = k0; k < (n); k += blockDim.x * gridDim.x)
        mine += (a[k] == b[k]);
    {
        __shared__ int mine_w[32];
        const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        const int size = blockDim.x * blockDim.y * blockDim.z;
        const int here = size - (tid & ~31);
        const unsigned wmask = here >= 32 ? 0xffffffffu : (1u << here) - 1u;
        for (int off = 16; off > 0; off /= 2) {
            int other = __shfl_down_sync(wmask, mine, off);
            if ((tid & 31) + off < here) mine += other;
        }
        if ((tid & 31) == 0) mine_w[tid / 32] = mine;
        __syncthreads();
        if (tid < 32) {
            const int warps = (size + 31) / 32;
            mine = tid < warps ? mine_w[tid] : (int)0;
            for (int off = 16; off > 0; off /= 2) {
                int other = __shfl_down_sync(wmask, mine, off);
                if (tid + off < here) mine += other;
            }
            if (tid == 0) atomicAdd(count, mine);
        }
    }
}
