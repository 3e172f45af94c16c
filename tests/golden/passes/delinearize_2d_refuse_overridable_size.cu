// RUN: delinearize-2d
// ----- INPUT
// the row length is a default the build may override (-DW=...): the file's value proves nothing
#ifndef W
#define W 512
#endif

__global__ void halve(const float* a, float* out, int h)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int y = t / W;
    int x = t % W;
    if (y < h)
        out[y * W + x] = 0.5f * a[y * W + x];
}
// ----- EXPECTED
// REFUSED: y: W is no kernel parameter nor a compile-time value the build cannot change
