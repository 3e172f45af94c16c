// RUN: smem-allpairs{tile=64},allpairs-pack
// ----- INPUT
// one float tile: nothing to pack
__global__ void potential(const float* x, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float sum = 0.0f;
    for (int j = 0; j < n; ++j)
        sum += 1.0f / (fabsf(x[i] - x[j]) + 0.1f);
    phi[i] = sum;
}
// ----- EXPECTED
// REFUSED: at least two float tiles
