// RUN: grid-stride-fill{vec=16}
// KERNEL: short_histo
// ----- INPUT
__global__ void short_histo(const short* keys, const float* w, float* out, int n)
{
    __shared__ float acc[32];
    if (threadIdx.x < 32)
        acc[threadIdx.x] = 0.0f;
    __syncthreads();
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n) {
        int b = keys[i] & 31;
        atomicAdd(&acc[b], w[i]);
    }
    __syncthreads();
    if (threadIdx.x < 32)
        atomicAdd(&out[threadIdx.x], acc[threadIdx.x]);
}
// ----- EXPECTED
__global__ void short_histo(const short* keys, const float* w, float* out, int n)
{
    __shared__ float acc[32];
    if (threadIdx.x < 32)
        acc[threadIdx.x] = 0.0f;
    __syncthreads();
    {
        const int nv = ((reinterpret_cast<unsigned long long>(keys) & 7) == 0 && (reinterpret_cast<unsigned long long>(w) & 15) == 0) ? (n) / 4 : 0;
        for (int q = threadIdx.x + blockIdx.x * blockDim.x; q < nv; q += blockDim.x * gridDim.x) {
            union { unsigned long long w; short e[4]; } keys_v;
            union { uint4 w; float e[4]; } w_v;
            keys_v.w = reinterpret_cast<const unsigned long long*>(keys)[q];
            w_v.w = reinterpret_cast<const uint4*>(w)[q];
    #pragma unroll
            for (int j = 0; j < 4; ++j) {
                {
                    int b = keys_v.e[j] & 31;
                    atomicAdd(&acc[b], w_v.e[j]);
                }
            }
        }
        for (int i = nv * 4 + threadIdx.x + blockIdx.x * blockDim.x; i < (n); i += blockDim.x * gridDim.x) {
            int b = keys[i] & 31;
            atomicAdd(&acc[b], w[i]);
        }
    }
    __syncthreads();
    if (threadIdx.x < 32)
        atomicAdd(&out[threadIdx.x], acc[threadIdx.x]);
}
