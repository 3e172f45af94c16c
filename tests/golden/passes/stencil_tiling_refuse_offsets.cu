// RUN: stencil-tiling
// ----- INPUT
// the window's length is a parameter: the footprint has no constant extent
__global__ void colsum(const float* in, float* out, int n, int m)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= n || y >= n - m)
        return;
    float s = 0.0f;
    for (int k = 0; k < m; k++)
        s += in[(y + k) * n + x];
    out[y * n + x] = s;
}
// ----- EXPECTED
// REFUSED: are not constant
