// RUN: grid-stride-fill
// ----- INPUT
__global__ void staged(const float* x, float* total, int n)
{
    __shared__ float buf[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        buf[threadIdx.x] = x[i];
        __syncthreads();
        atomicAdd(total, buf[255 - threadIdx.x]);
    }
}
// ----- EXPECTED
// REFUSED: a barrier, return or jump (or a block index) in the element's code
