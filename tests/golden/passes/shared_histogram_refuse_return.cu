// RUN: shared-histogram
// ----- INPUT
__global__ void hist_until(const int* keys, unsigned int* hist, int n, int nbins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = i; k < n; k += gridDim.x * blockDim.x) {
        if (keys[k] < 0) return;
        atomicAdd(&hist[keys[k]], 1u);
    }
}
// ----- EXPECTED
// REFUSED: not a top-level guard
