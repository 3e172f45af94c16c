// RUN: atomic-accumulate
// ----- INPUT
__global__ void sum_and_copy(const float* in, float* out, float* total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i];
        atomicAdd(total, in[i]);
    }
}
// ----- EXPECTED
// REFUSED: the guarded code must be the atomicAdd alone
