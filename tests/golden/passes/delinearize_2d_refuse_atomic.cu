// RUN: delinearize-2d
// ----- INPUT
// a histogram of a flat index: atomics may depend on the 1-D order of the threads
__global__ void bins(const int* keys, int* counts, int rows, int cols)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = t / cols;
    int c = t % cols;
    if (r < rows)
        atomicAdd(&counts[keys[r * cols + c]], 1);
}
// ----- EXPECTED
// REFUSED: kernel uses shared memory or atomics: they may depend on the 1-D order of the threads
