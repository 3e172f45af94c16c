// RUN: smem-allpairs{tile=64 unroll=128}
// ----- INPUT
// an unroll factor above the tile is refused
__global__ void gram(const float* x, float* out, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m)
        return;
    float acc = 0.0f;
    for (int j = 0; j < m; j++)
        acc += x[j] * x[i];
    out[i] = acc;
}
// ----- EXPECTED
// REFUSED: unroll from 0 (no full-tile loop) to the tile
