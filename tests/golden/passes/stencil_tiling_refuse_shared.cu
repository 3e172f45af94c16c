// RUN: stencil-tiling
// ----- INPUT
__global__ void blur(const float* in, float* out, int n)
{
    __shared__ float row[34];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    row[threadIdx.x] = 0.0f;
    __syncthreads();
    if (x > 0 && x < n - 1 && y < n)
        out[y * n + x] = row[threadIdx.x] + in[y * n + x - 1] + in[y * n + x + 1];
}
// ----- EXPECTED
// REFUSED: shared memory
