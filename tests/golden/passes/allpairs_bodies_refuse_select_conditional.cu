// RUN: smem-allpairs{tile=64},allpairs-bodies{skip=select}
// ----- INPUT
// a sum under a condition after the skip: no select form
__global__ void pot(const float* x, const float* y, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float p = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        float dx = x[j] - x[i], dy = y[j] - y[i];
        if (dx > 0.0f) p -= m[j] / sqrtf(dx * dx + dy * dy + 0.01f);
    }
    phi[i] = p;
}
// ----- EXPECTED
// REFUSED: may only declare locals and add to its sums
