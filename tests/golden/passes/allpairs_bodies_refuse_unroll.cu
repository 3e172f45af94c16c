// RUN: smem-allpairs{tile=64 unroll=8},allpairs-bodies
// ----- INPUT
// unroll: two pair loops (full tiles, the last)
__global__ void pot(const float* x, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xi = x[i];
    float p = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        p -= m[j] / fabsf(xi - x[j]);
    }
    phi[i] = p;
}
// ----- EXPECTED
// REFUSED: smem-allpairs without unroll
