/*
 * blas1.cuh - templated level-1 BLAS style kernels.
 *
 * Templates are defined in the header so that they are instantiated at the
 * launch site (e.g. axpby_t<float, 256><<<...>>> in src/main.cu).
 */
#ifndef HEAT3D_BLAS1_CUH
#define HEAT3D_BLAS1_CUH

#include <cuda_runtime.h>

/* y = a*x + b*y, one element per thread, BS threads per block */
template <typename T, int BS>
__global__ void __launch_bounds__(BS) axpby_t(T a, const T* x, T b, T* y, int n)
{
    int i = blockIdx.x * BS + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + b * y[i];
    }
}

#endif /* HEAT3D_BLAS1_CUH */
