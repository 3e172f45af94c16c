// RUN: smem-allpairs
// ----- INPUT
__global__ void first_close(const float* x, int* first, int n, float eps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int f = -1;
    for (int j = 0; j < n; ++j) {
        if (j != i && fabsf(x[i] - x[j]) < eps) { f = j; break; }
    }
    first[i] = f;
}
// ----- EXPECTED
// REFUSED: must not break
