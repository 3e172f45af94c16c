// RUN: smem-allpairs{tile=128}
// ----- INPUT
#define NB 4096
__global__ void potential(const float* x, const float* m, float* phi)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < NB) {
        float p = 0.0f;
        for (int j = 0; j < NB; j++) {
            if (j == i)
                continue;
            p -= m[j] / fabsf(x[j] - x[i]);
        }
        phi[i] = p;
    }
}
// ----- EXPECTED
#define NB 4096
__global__ void potential(const float* x, const float* m, float* phi)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = (i < NB);
    if (!(0 < (NB))) return;
    if (!live) i = (NB) - 1;
    {
        float p = 0.0f;
        __shared__ float x_s[128];
        __shared__ float m_s[128];
        const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        const int nthr = blockDim.x * blockDim.y * blockDim.z;
        for (int t = 0; t < NB; t += 128) {
            for (int l = tid; l < 128 && l < NB - t; l += nthr) x_s[l] = x[t + l];
            for (int l = tid; l < 128 && l < NB - t; l += nthr) m_s[l] = m[t + l];
            __syncthreads();
            for (int j = t; j < NB && j - t < 128; ++j) {
                if (j == i)
                    continue;
                p -= m_s[j - t] / fabsf(x_s[j - t] - x[i]);
            }
            __syncthreads();
        }
        if (live) {
            phi[i] = p;
        }
    }
}
