// RUN: contraction-blocking
// ----- INPUT
#ifdef SINGLE
#define DATA_TYPE float
#else
#define DATA_TYPE double
#endif
typedef DATA_TYPE real_t;

__global__ void gemm(int ni, int nj, int nk, DATA_TYPE alpha, DATA_TYPE beta, const DATA_TYPE* a, const real_t* b, DATA_TYPE* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if ((i < ni) && (j < nj)) {
        c[i * nj + j] *= beta;
        for (int k = 0; k < nk; k++)
            c[i * nj + j] += alpha * a[i * nk + k] * b[k * nj + j];
    }
}
// ----- EXPECTED
// REFUSED: the float4 form needs float operands and a float accumulator (here DATA_TYPE/real_t/DATA_TYPE)
