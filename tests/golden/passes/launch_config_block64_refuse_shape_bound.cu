// RUN: launch-config{block=64}
// ----- INPUT
__global__ void rows(const float* a, float* out, int n)
{
    int i = threadIdx.x;
    int j = blockIdx.x + 1;
    out[j * n + i] = a[j * n + i];
}
// ----- EXPECTED
// REFUSED: is used on its own, not only in blockIdx*blockDim+threadIdx
