// RUN: warp-rows
// ----- INPUT
__global__ void rowdot(const float* A, float* y, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && threadIdx.x % 2 == 0) {
        float s = 0.0f;
        for (int k = 0; k < n; k++)
            s += A[row * n + k];
        y[row] = s;
    }
}
// ----- EXPECTED
// REFUSED: guard `if (row < n) { ... }`
