// RUN: fast-math
// KERNEL: decay
// ----- INPUT
/* weight of a distance */
__device__ float weight(float r) { return 1.0f / sqrtf(r) * expf(-r); }

/* decay each value by its weight */
__global__ void decay(float* v, const float* r, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= weight(r[i]) + cosf(r[i]) + sqrt(2.0);
}
// ----- EXPECTED
/* weight of a distance */
__device__ float weight(float r) { return 1.0f / sqrtf(r) * expf(-r); }

#ifndef S2S_FAST_WEIGHT_FAST
#define S2S_FAST_WEIGHT_FAST
__device__ float weight_fast(float r) { return rsqrtf(r) * __expf(-r); }
#endif

/* decay each value by its weight */
__global__ void decay(float* v, const float* r, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= weight_fast(r[i]) + __cosf(r[i]) + sqrt(2.0);
}
