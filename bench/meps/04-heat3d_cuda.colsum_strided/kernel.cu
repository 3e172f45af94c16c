// s2s extract: kernel linalg::colsum_strided from src/kernels_linalg.cu:51
// closure: libclang, with the unit compile flags
// translation unit: src/kernels_linalg.cu
#include <cuda_runtime.h>
// s2s: kernel from src/kernels_linalg.cu:51
namespace linalg { 
__global__ void colsum_strided(const float* Acm, float* colsum, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;

    float sum = 0.0f;
    for (int i = 0; i < n; ++i) {
        sum += Acm[j * n + i];
    }
    colsum[j] = sum;
}
} // namespace linalg
