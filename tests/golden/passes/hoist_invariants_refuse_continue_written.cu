// RUN: hoist-invariants
// ----- INPUT
// a `continue` is accepted, but w[i] is written in the loop: not an invariant load
__global__ void pairs(const float* x, float* w, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    for (int j = 0; j < n; j++) {
        if (j == i)
            continue;
        w[i] = w[i] + x[j];
    }
}
// ----- EXPECTED
// REFUSED: w is not a parameter the kernel only reads
