// RUN: atomic-accumulate
// ----- INPUT
__global__ void bins(const int* key, int* hist, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&hist[key[i]], 1);
}
// ----- EXPECTED
// REFUSED: the atomic's address differs between threads
