// RUN: smem-allpairs{tile=64},hoist-invariants,allpairs-bodies
// ----- INPUT
// hoist-invariants first: x[i] read in the tile loop, outside the pair loop
__global__ void pot(const float* x, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float p = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        p -= m[j] / fabsf(x[i] - x[j]);
    }
    phi[i] = p;
}
// ----- EXPECTED
// REFUSED: hoist-invariants goes after
