// RUN: warp-reduce-atomics
// ----- INPUT
__global__ void total(const float* u, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&out[0], u[i]);
}
// ----- EXPECTED
// REFUSED: early return
