// RUN: smem-allpairs{tile=128}
// ----- INPUT
template <typename T>
__global__ void gram_row(const T* __restrict__ x, const T* __restrict__ y, T* out, unsigned m)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    T xi = x[i];
    T acc = 0;
    for (unsigned j = 0; j < m; j++)
        acc += xi * y[j] + x[j];
    out[i] = acc;
}
// ----- EXPECTED
template <typename T>
__global__ void gram_row(const T* __restrict__ x, const T* __restrict__ y, T* out, unsigned m)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    T xi = x[i];
    T acc = 0;
    __shared__ T x_s[128];
    __shared__ T y_s[128];
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthr = blockDim.x * blockDim.y * blockDim.z;
    for (unsigned t = 0; t < m; t += 128) {
        for (int l = tid; l < 128 && l < m - t; l += nthr) x_s[l] = x[t + l];
        for (int l = tid; l < 128 && l < m - t; l += nthr) y_s[l] = y[t + l];
        __syncthreads();
        for (unsigned j = t; j < m && j - t < 128; ++j) acc += xi * y_s[j - t] + x_s[j - t];
        __syncthreads();
    }
    out[i] = acc;
}
