// RUN: delinearize-2d
// ----- INPUT
// a barrier: every thread of the 1-D block must reach it
__global__ void sync_scale(const float* a, float* out, int rows, int cols)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = t / cols;
    int c = t % cols;
    float v = r < rows ? a[r * cols + c] : 0.0f;
    __syncthreads();
    if (r < rows)
        out[r * cols + c] = v * 3.0f;
}
// ----- EXPECTED
// REFUSED: __syncthreads may depend on the 1-D order of the threads
