// RUN: split-reduction{splits=8 cols=32 quad=4 cluster=8}
// ----- INPUT
__global__ void rowsum(const float* A, float* out, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float s = 0.0f;
        for (int c = 0; c < cols; c++)
            s += A[r * cols + c];
        out[r] = s;
    }
}
// ----- EXPECTED
// REFUSED: cluster splits a column walk (coalesced threads); this loop walks along k (lanes mode)
