// RUN: warp-reduce-atomics
// ----- INPUT
__global__ void kinetic(const float* m, const float* v, float* ke, int n)
{
    extern __shared__ float sdata[];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float e = 0.0f;
    if (i < n) e = 0.5f * m[i] * v[i] * v[i];
    sdata[tid] = e;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(ke, sdata[0]);
}
// ----- EXPECTED
// REFUSED: the block already reduces
