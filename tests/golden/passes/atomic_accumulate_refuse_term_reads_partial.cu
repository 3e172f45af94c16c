// RUN: atomic-accumulate
// ----- INPUT
__global__ void decay(const float* x, float* total, int n)
{
    float part = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        part += x[i] - 0.5f * part;
    atomicAdd(total, part);
}
// ----- EXPECTED
// REFUSED: the term must not read part
