// RUN: hoist-invariants
// ----- INPUT
// s[i] is read only on some iterations: hoisting it could read what the original never reads
__global__ void clip(const float* a, const float* s, float* out, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    for (int j = 0; j < m; j++)
        out[i * m + j] = a[i * m + j] > 0.0f ? a[i * m + j] : s[i];
}
// ----- EXPECTED
// REFUSED: s[i]: read under a condition in the loop over j
