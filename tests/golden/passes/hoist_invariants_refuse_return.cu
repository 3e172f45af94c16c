// RUN: hoist-invariants
// ----- INPUT
// a `return` in the loop leaves the kernel: refused, as before (only the loop's own continue/break are accepted)
__global__ void pairs(const float* x, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float s = 0.0f;
    for (int j = 0; j < n; j++) {
        if (x[j] < 0.0f)
            return;
        s += x[j] * x[i];
    }
    out[i] = s;
}
// ----- EXPECTED
// REFUSED: may leave the kernel or jump (return, goto)
