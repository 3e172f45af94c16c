// RUN: split-reduction{splits=8 cols=32 quad=4 cluster=8}
// ----- INPUT
__global__ void __launch_bounds__(128) colsum(const float* A, float* out, int rows, int cols)
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
// REFUSED: the kernel declares __launch_bounds__(128): the cluster form sets its own
