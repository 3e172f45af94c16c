// RUN: split-reduction{splits=64 cols=8}
// ----- INPUT
#define LDA_(i, j) a[(j) * lda + (i)]
__global__ void colmajor_mv(int m, int n, int lda, float alpha, const float* a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m)
        return;
    float acc = 0.0f;
    for (int j = 0; j < n; ++j)
        acc += LDA_(i, j) * x[j];
    y[i] = alpha * acc + y[i];
}
// ----- EXPECTED
#define LDA_(i, j) a[(j) * lda + (i)]
__global__ void colmajor_mv(int m, int n, int lda, float alpha, const float* a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __shared__ float red[64][8];
    const int s = threadIdx.y;
    float part = 0;
    if (!(i >= m)) {
        for (int j = 0 + s; j < n; j += 64)
            part += LDA_(i, j) * x[j];
    }
    red[s][threadIdx.x] = part;
    __syncthreads();
    if (s == 0) {
        for (int off = 1; off < 64; ++off)
            part += red[off][threadIdx.x];
    }
    if (s == 0 && (!(i >= m))) {
        float acc = 0.0f;
        acc += part;
        y[i] = alpha * acc + y[i];
    }
}
