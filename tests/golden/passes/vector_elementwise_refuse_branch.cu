// RUN: vector-elementwise
// ----- INPUT
__global__ void relu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (x[i] > 0.0f)
            return;
        y[i] = x[i];
    }
}
// ----- EXPECTED
// REFUSED: the element's code is not straight-line declarations and expression statements
