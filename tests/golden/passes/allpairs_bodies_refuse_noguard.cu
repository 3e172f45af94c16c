// RUN: smem-allpairs{tile=64},allpairs-bodies
// ----- INPUT
// no guard: smem-allpairs keeps the launch and has no live flag to repeat
__global__ void pot(const float* x, const float* m, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    float xi = x[i];
    float p = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        p -= m[j] / fabsf(xi - x[j]);
    }
    phi[i] = p;
}
// ----- EXPECTED
// REFUSED: guarded form
