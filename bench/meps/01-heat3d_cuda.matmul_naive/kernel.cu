// s2s extract: kernel linalg::matmul_naive from src/kernels_linalg.cu:13
// closure: libclang, with the unit compile flags
// translation unit: src/kernels_linalg.cu
#include <cuda_runtime.h>
// s2s: kernel from src/kernels_linalg.cu:13
namespace linalg { 
__global__ void matmul_naive(const float* A, const float* B, float* C, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;   /* column */
    int i = blockIdx.y * blockDim.y + threadIdx.y;   /* row    */
    if (i >= n || j >= n) return;

    C[i * n + j] = 0.0f;
    for (int k = 0; k < n; ++k) {
        C[i * n + j] += A[i * n + k] * B[k * n + j];
    }
}
} // namespace linalg
