// s2s extract: kernel axpby_t from include/blas1.cuh:13
// closure: libclang, with the unit compile flags
// translation unit: src/main.cu
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
// s2s: kernel from include/blas1.cuh:13
template <typename T, int BS>
__global__ void __launch_bounds__(BS) axpby_t(T a, const T* x, T b, T* y, int n)
{
    int i = blockIdx.x * BS + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + b * y[i];
    }
}
// s2s: instantiations seen at launch sites
static void* const s2s_instance_0 = (void*)&axpby_t<float, 256>;
