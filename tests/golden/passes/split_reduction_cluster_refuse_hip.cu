// RUN: split-reduction{splits=8 cols=32 quad=4 cluster=8}
// ----- INPUT
#include <hip/hip_runtime.h>
__global__ void colsum(const float* A, float* out, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 0.0f;
        for (int r = 0; r < rows; r++)
            s += A[r * cols + c];
        out[c] = s;
    }
}
// ----- EXPECTED
// REFUSED: thread-block clusters are CUDA's (sm_90 and newer); HIP has none
