// RUN: grid-stride-fill{vec=16}
// KERNEL: histo_mark
// ----- INPUT
__global__ void histo_mark(unsigned char* data, int* bins, int n)
{
    __shared__ int local[16];
    if (threadIdx.x < 16)
        local[threadIdx.x] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&local[data[i] & 15], 1);
        data[i] = 0;
    }
    __syncthreads();
    if (threadIdx.x < 16)
        atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}
// ----- EXPECTED
// REFUSED: `data` is written: only arrays the kernel only reads come in as words
