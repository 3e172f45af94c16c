// RUN: atomic-accumulate
// ----- INPUT
__global__ void block_part(const float* x, float* total, int n)
{
    float part = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x)
        part += x[i];
    atomicAdd(total, part);
}
// ----- EXPECTED
// REFUSED: GRID_STRIDE
