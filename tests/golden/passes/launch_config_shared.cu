// RUN: launch-config{block=256}
// ----- INPUT
__global__ void blocksum(const float* x, float* out)
{
    __shared__ float s[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = x[i];
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
// ----- EXPECTED
// REFUSED: shared memory
