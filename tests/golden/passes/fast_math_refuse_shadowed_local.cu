// RUN: fast-math
// ----- INPUT
/* r is declared twice (the inner one shadows the outer): which uses are divisors of which is not read here */
__global__ void shadow(const float* a, float* b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float r = sqrtf(a[i] + 1.0f);
    if (a[i] > 0.0f) {
        float r = a[i] * 2.0f;
        b[i] = r;
    }
    b[i] = b[i] / r;
}
// ----- EXPECTED
// REFUSED: no x / sqrtf(y), expf
