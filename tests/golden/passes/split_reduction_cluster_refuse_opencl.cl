// RUN: split-reduction{splits=8 cols=32 quad=4 cluster=8}
// ----- INPUT
__kernel void colsum(__global const float* A, __global float* out, int rows, int cols)
{
    int c = get_global_id(0);
    if (c < cols) {
        float s = 0.0f;
        for (int r = 0; r < rows; r++)
            s += A[r * cols + c];
        out[c] = s;
    }
}
// ----- EXPECTED
// REFUSED: thread-block clusters are CUDA's (sm_90 and newer); OpenCL has none
