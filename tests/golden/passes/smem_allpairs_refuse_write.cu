// RUN: smem-allpairs
// ----- INPUT
__global__ void pair_dist(const float* x, float* d, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xi = x[i];
    for (int j = 0; j < n; ++j)
        d[i * n + j] = fabsf(xi - x[j]);
}
// ----- EXPECTED
// REFUSED: d is written or passed on before the end of the loop
