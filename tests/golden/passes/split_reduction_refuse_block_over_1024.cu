// RUN: split-reduction{splits=64 cols=32}
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
// REFUSED: cols x splits at most 1024
