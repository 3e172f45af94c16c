// RUN: smem-allpairs{tile=64},loop-unroll{factor=4},allpairs-pack
// ----- INPUT
// loop-unroll first: its pragmas stand before the load loops the pass would remove
__global__ void pot(const float* x, const float* y, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float p = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        float dx = x[j] - x[i], dy = y[j] - y[i];
        p -= m[j] / sqrtf(dx * dx + dy * dy + 0.01f);
    }
    phi[i] = p;
}
// ----- EXPECTED
// REFUSED: loop-unroll goes after
