/*
 * kernels.hip - the kernels of hip_matrix and their launches, in the three
 * ways HIP code writes a launch.
 */
#include <hip/hip_runtime.h>

#include "matrix.h"

#define TILE 16

/* naive product: one thread per element of C, each reading a row of A and
 * a column of B from global memory */
__global__ void matmul(const float* A, const float* B, float* C, int n)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; ++k)
            acc += A[row * n + k] * B[k * n + col];
        C[row * n + col] = acc;
    }
}

template <typename T>
__global__ void scale_rows(T* A, const T* s, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y;
    if (col < n)
        A[row * n + col] *= s[row];
}

__global__ void halve_sum(float* x, const float* y, int count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count)
        x[i] = (x[i] + y[i]) * 0.5f;
}

void multiply(const float* dA, const float* dB, float* dC, int n, hipStream_t stream)
{
    dim3 block(TILE, TILE);
    dim3 grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    hipLaunchKernelGGL(matmul, grid, block, 0, stream, dA, dB, dC, n);
    HIP_CHECK(hipGetLastError());
}

void scale_rows_f(float* dA, const float* ds, int n, hipStream_t stream)
{
    hipLaunchKernelGGL(HIP_KERNEL_NAME(scale_rows<float>), dim3((n + 255) / 256, n), dim3(256), 0, stream,
                       dA, ds, n);
    HIP_CHECK(hipGetLastError());
}

void relax(float* dx, const float* dy, int count, hipStream_t stream)
{
    halve_sum<<<(count + 255) / 256, 256, 0, stream>>>(dx, dy, count);
    HIP_CHECK(hipGetLastError());
}
