// RUN: stencil-registers{cols=2}
// ----- INPUT
// x is used between its declaration and y's: with cols > 1 x becomes xbase + cx inside the loop over the outputs,
// and the statement before it would see no x
__global__ void blur(const float* in, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int xr = x + 1;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || x >= w - 1 || y < 1 || y >= h - 1)
        return;
    out[y * w + x] = (in[y * w + x - 1] + in[y * w + x] + in[y * w + xr]) * (1.0f / 3.0f);
}
// ----- EXPECTED
// REFUSED: x or the x thread index is used before x's points are known (cols > 1)
