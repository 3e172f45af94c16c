// RUN: inner-loop-threads
// ----- INPUT
__global__ void mirror(const float* a, float* s, int m)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x;
    if (j1 < m) {
        for (int j2 = 0; j2 < m; j2++) {
            s[j1 * m + j2] = a[j1] + a[j2];
            s[j2 * m + j1] = a[j1] - a[j2];
        }
    }
}
// ----- EXPECTED
// REFUSED: s[j1 * m + j2] and s[j2 * m + j1] mirror each other over a square range: two threads would write one element
