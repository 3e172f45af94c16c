// RUN: shared-histogram
// ----- INPUT
__global__ void scatter(const int* cell, const float* m, float* rho, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&rho[cell[i]], m[i]);
}
// ----- EXPECTED
// REFUSED: length of rho is not known
