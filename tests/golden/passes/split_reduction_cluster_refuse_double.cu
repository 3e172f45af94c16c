// RUN: split-reduction{splits=8 cols=32 quad=4 cluster=8}
// ----- INPUT
__global__ void colsum(const double* A, double* out, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        double s = 0.0;
        for (int r = 0; r < rows; r++)
            s += A[r * cols + c];
        out[c] = s;
    }
}
// ----- EXPECTED
// REFUSED: cluster needs a term of float elements stepping by one with the output index
