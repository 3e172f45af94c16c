// RUN: grid-stride-fill{vec=16 words=2}
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
        for (int q = threadIdx.x + blockIdx.x * blockDim.x; q < nv; q += 2 * (blockDim.x * gridDim.x)) {
            union { unsigned long long w; short e[4]; } keys_v[2];
            union { uint4 w; float e[4]; } w_v[2];
    #pragma unroll
            for (int u = 0; u < 2; ++u)
                if (q + u * (blockDim.x * gridDim.x) < nv) {
                    keys_v[u].w = reinterpret_cast<const unsigned long long*>(keys)[q + u * (blockDim.x * gridDim.x)];
                    w_v[u].w = reinterpret_cast<const uint4*>(w)[q + u * (blockDim.x * gridDim.x)];
                }
    #pragma unroll
            for (int u = 0; u < 2; ++u) {
                if (q + u * (blockDim.x * gridDim.x) < nv) {
    #pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        {
                            int b = keys_v[u].e[j] & 31;
                            atomicAdd(&acc[b], w_v[u].e[j]);
                        }
                    }
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
