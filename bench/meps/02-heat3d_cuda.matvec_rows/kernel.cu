// s2s extract: kernel linalg::matvec_rows from src/kernels_linalg.cu:26
// closure: libclang, with the unit compile flags
// translation unit: src/kernels_linalg.cu
#include <cuda_runtime.h>
// s2s: kernel from src/kernels_linalg.cu:26
namespace linalg { 
__global__ void matvec_rows(const float* A, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;

    float sum = 0.0f;
    for (int k = 0; k < n; ++k) {
        sum += A[i * n + k] * x[k];
    }
    y[i] = sum;
}
} // namespace linalg
