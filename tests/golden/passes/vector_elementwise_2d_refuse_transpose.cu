// RUN: vector-elementwise-2d
// ----- INPUT
__global__ void transpose(const float* in, float* out, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n)
        out[j * n + i] = in[i * n + j];
}
// ----- EXPECTED
// REFUSED: `out[j * n + i]` neither steps by one element with j nor is free of it
