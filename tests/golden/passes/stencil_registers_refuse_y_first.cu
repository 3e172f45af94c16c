// RUN: stencil-registers
// ----- INPUT
// y is declared before x: the window (which needs x) would have to be loaded inside the loop over y's points
__global__ void blur(const float* in, float* out, int w, int h)
{
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x < 1 || x >= w - 1 || y < 1 || y >= h - 1)
        return;
    out[y * w + x] = (in[(y - 1) * w + x] + in[y * w + x] + in[(y + 1) * w + x]) * (1.0f / 3.0f);
}
// ----- EXPECTED
// REFUSED: x must be declared before y: the register window is loaded before the loop over y
