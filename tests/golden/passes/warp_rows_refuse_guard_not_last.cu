// RUN: warp-rows
// ----- INPUT
__global__ void rowdot_count(const float* A, float* y, float* visits, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n) {
        float s = 0.0f;
        for (int k = 0; k < n; k++)
            s += A[row * n + k];
        y[row] = s;
    }
    visits[row] += 1.0f;
}
// ----- EXPECTED
// REFUSED: guard `if (row < n) { ... }`
