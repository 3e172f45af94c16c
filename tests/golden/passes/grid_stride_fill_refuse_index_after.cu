// RUN: grid-stride-fill
// ----- INPUT
__global__ void count_and_mark(const int* key, int* hits, int* seen, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(hits, key[i] > 0);
    if (i == 0) seen[0] = 1;
}
// ----- EXPECTED
// REFUSED: `i` is used outside its guard
