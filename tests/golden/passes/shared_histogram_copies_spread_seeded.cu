// RUN: shared-histogram{copies=16}
// KERNEL: histo_seeded
// ----- INPUT
__global__ void histo_seeded(const unsigned char* data, int* bins, int n)
{
    __shared__ int local[64];
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        local[b] = b == 0 ? 1 : 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&local[data[i] >> 2], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        atomicAdd(&bins[b], local[b] - (b == 0));
}
// ----- EXPECTED
__global__ void histo_seeded(const unsigned char* data, int* bins, int n)
{
    __shared__ int local[(64) * 16];
    const int local_cp = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 15;
    auto local_sum = [&](long long local_at) { int local_v = 0; for (int local_c = 0; local_c < 16; ++local_c) local_v += local[local_at * 16 + ((local_c + local_at) & 15)]; return local_v; };
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        { const long long local_at = (b); const int local_v = (b == 0 ? 1 : 0); for (int local_c = 0; local_c < 16; ++local_c) local[local_at * 16 + local_c] = local_c == 0 ? local_v : (int)0; }
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&local[(data[i] >> 2) * 16 + local_cp], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        atomicAdd(&bins[b], local_sum(b) - (b == 0));
}
