// RUN: grid-stride-fill
// ----- INPUT
#define NB 32
__global__ void binned_copy(const int* __restrict__ key, int* __restrict__ bin_of, int* counts, int n)
{
    __shared__ int local[NB];
    if (threadIdx.x < NB)
        local[threadIdx.x] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int b = key[i] & (NB - 1);
        bin_of[i] = b;
        atomicAdd(&local[b], 1);
    }
    __syncthreads();
    if (threadIdx.x < NB)
        atomicAdd(&counts[threadIdx.x], local[threadIdx.x]);
}
// ----- EXPECTED
#define NB 32
__global__ void binned_copy(const int* __restrict__ key, int* __restrict__ bin_of, int* counts, int n)
{
    __shared__ int local[NB];
    if (threadIdx.x < NB)
        local[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x) {
        int b = key[i] & (NB - 1);
        bin_of[i] = b;
        atomicAdd(&local[b], 1);
    }
    __syncthreads();
    if (threadIdx.x < NB)
        atomicAdd(&counts[threadIdx.x], local[threadIdx.x]);
}
