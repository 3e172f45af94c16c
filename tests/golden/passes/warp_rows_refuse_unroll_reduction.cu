// RUN: warp-rows{unroll=4}
// ----- INPUT
__global__ void matvec(const float* A, const float* x, float* y, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) {
        sum += A[row * n + j] * x[j];
    }
    y[row] = sum;
}
// ----- EXPECTED
// REFUSED: unroll batches the loads of a running sum's chunks: this loop is a reduction (use lanes alone)
