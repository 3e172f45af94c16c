// RUN: inner-loop-threads
// ----- INPUT
__global__ void colsum(const float* a, float* s, int m)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x;
    if (j1 < m) {
        for (int j2 = 0; j2 < m; j2++)
            s[j1] += a[j2 * m + j1];
    }
}
// ----- EXPECTED
// REFUSED: s[j1]: every iteration over j2 must write its own element
