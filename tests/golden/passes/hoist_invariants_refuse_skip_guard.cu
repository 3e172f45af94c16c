// RUN: hoist-invariants
// ----- INPUT
// the `continue` guards the load's own index and does not depend on j: for a thread past n it skips every trip, so the
// original never reads w[i] there, and a hoisted w[i] would read past the array: refused
__global__ void weighted(const float* x, const float* w, float* out, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int j = 0; j < m; j++) {
        if (i >= n)
            continue;
        s += x[j] * w[i];
    }
    if (i < n)
        out[i] = s;
}
// ----- EXPECTED
// REFUSED: may skip every trip
