// RUN: delinearize-2d
// KERNEL: weigh
// ----- INPUT
// a helper reads the lane from threadIdx.x: the split would change which lane computes what
__device__ float lane_weight(float v)
{
    return (threadIdx.x % 32 == 0) ? 2.0f * v : v;
}

__device__ float scaled(float v)
{
    return lane_weight(v) + 1.0f;
}

__global__ void weigh(const float* a, float* out, int rows, int cols)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = t / cols;
    int c = t % cols;
    if (r < rows)
        out[r * cols + c] = scaled(a[r * cols + c]);
}
// ----- EXPECTED
// REFUSED: lane_weight (called by the kernel) uses thread indices or barriers: it may depend on the 1-D order
