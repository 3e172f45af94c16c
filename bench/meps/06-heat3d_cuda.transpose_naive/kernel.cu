// s2s extract: kernel linalg::transpose_naive from src/kernels_linalg.cu:39
// closure: libclang, with the unit compile flags
// translation unit: src/kernels_linalg.cu
#include <cuda_runtime.h>
// s2s: kernel from src/kernels_linalg.cu:39
namespace linalg { 
__global__ void transpose_naive(const float* A, float* At, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) {
        At[j * n + i] = A[i * n + j];
    }
}
} // namespace linalg
