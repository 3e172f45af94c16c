// RUN: smem-allpairs{tile=64 unroll=8},hoist-invariants
// ----- INPUT
// one statement as the body, an unsigned counter; hoist-invariants then reads w[i] once before each pair loop
__global__ void gram(const float* x, const float* w, float* out, unsigned m)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m)
        return;
    float acc = 0.0f;
    for (unsigned j = 0; j < m; j++)
        acc += x[j] * w[i];
    out[i] = acc;
}
// ----- EXPECTED
// one statement as the body, an unsigned counter; hoist-invariants then reads w[i] once before each pair loop
__global__ void gram(const float* x, const float* w, float* out, unsigned m)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = !(i >= m);
    if (!(0 < (m))) return;
    if (!live) i = (m) - 1;
    float acc = 0.0f;
    __shared__ float x_s[64];
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthr = blockDim.x * blockDim.y * blockDim.z;
    for (unsigned t = 0; t < m; t += 64) {
        for (int l = tid; l < 64 && l < m - t; l += nthr) x_s[l] = x[t + l];
        __syncthreads();
        if (m - t >= 64) {
            const float w_h = w[i];
            #pragma unroll 8
            for (unsigned j = t; j < t + 64; ++j) acc += x_s[j - t] * w_h;
        } else {
            const float w_h_ = t < m ? w[i] : (float)0;
            for (unsigned j = t; j < m; ++j) acc += x_s[j - t] * w_h_;
        }
        __syncthreads();
    }
    if (live) {
        out[i] = acc;
    }
}
