// RUN: vector-elementwise
// ----- INPUT
__global__ void doubling(const float* x, float* y, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        a = a * 2.0f;
        y[i] = a * x[i];
    }
}
// ----- EXPECTED
// REFUSED: `a` is assigned in the element's code: it would carry over between elements
