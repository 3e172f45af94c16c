// RUN: delinearize-2d
// ----- INPUT
// shared memory indexed by threadIdx.x: the block's threads must stay consecutive in t
__global__ void rowshift(const float* a, float* out, int rows, int cols)
{
    __shared__ float tile[256];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = t / cols;
    int c = t % cols;
    if (r < rows) {
        tile[threadIdx.x] = a[r * cols + c];
        out[r * cols + c] = 2.0f * tile[threadIdx.x];
    }
}
// ----- EXPECTED
// REFUSED: kernel uses shared memory or atomics: they may depend on the 1-D order of the threads
