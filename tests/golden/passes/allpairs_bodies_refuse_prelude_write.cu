// RUN: smem-allpairs{tile=64},allpairs-bodies
// ----- INPUT
// a local from i assigned before the loop: it cannot be repeated as a declaration
__global__ void pot(const float* x, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xi = x[i];
    float p = 0.0f;
    xi = xi * 2.0f;
    for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        p -= m[j] / fabsf(xi - x[j]);
    }
    phi[i] = p;
}
// ----- EXPECTED
// REFUSED: only declarations may use i
