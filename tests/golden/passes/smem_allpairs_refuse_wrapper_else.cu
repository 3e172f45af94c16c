// RUN: smem-allpairs
// ----- INPUT
#define NB 4096
__global__ void potential(const float* x, float* phi)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < NB) {
        float p = 0.0f;
        for (int j = 0; j < NB; j++)
            p += x[j] * x[i];
        phi[i] = p;
    } else {
        phi[0] = 0.0f;
    }
}
// ----- EXPECTED
// REFUSED: last guard `if (i < n) { ... }` without else
