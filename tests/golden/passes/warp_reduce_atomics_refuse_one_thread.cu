// RUN: warp-reduce-atomics
// ----- INPUT
__global__ void count_blocks(const int* flags, int* total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) {
        atomicAdd(total, 1);
    }
}
// ----- EXPECTED
// REFUSED: one thread per block does the atomic
