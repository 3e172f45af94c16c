// long-kernel zoo: a chain of three dense products, each rescaled into the next one's left operand
// (A <- s * (A B), three times). The product is the plain row-major form, one thread per output element, the
// accumulator in a register, no tiling: at N = 16384 one launch is 8.8 TFLOP, about 1.6 s or more on an H200 (the
// same form ran at 5.4 TFLOP/s at N = 2048, where B fits in L2). Around it: two fill launches, two rescales and a
// row-sum for the checksum, so the profile has four kernels. Its own check is cheap: 64 sampled entries of the last
// product against the CPU in double precision, from the rows and columns they need (never a whole CPU product).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#ifndef N
#define N 16384
#endif
#define PRODUCTS 3
#define SAMPLES 64

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            std::exit(3);                                                                    \
        }                                                                                    \
    } while (0)

// deterministic values in [-1, 1) from the element's index and a seed (a 32-bit integer hash)
__host__ __device__ inline float hash_uniform(unsigned i, unsigned seed)
{
    unsigned h = i * 2654435761u ^ (seed * 0x9e3779b9u + 0x7f4a7c15u);
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return (float)(h >> 8) / 8388608.0f - 1.0f;
}

__global__ void fill_uniform(float* M, int count, unsigned seed)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count)
        M[i] = hash_uniform((unsigned)i, seed);
}

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

__global__ void rescale(const float* C, float* A, int count, float s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count)
        A[i] = s * C[i];
}

__global__ void row_abs_sums(const float* C, float* sums, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n) {
        float s = 0.0f;
        for (int j = 0; j < n; ++j)
            s += fabsf(C[row * n + j]);
        sums[row] = s;
    }
}

int main()
{
    const int n = N;
    const int count = n * n;
    const float s = sqrtf(3.0f / (float)n);  // keeps the entries of each product near unit variance
    float *dA, *dB, *dC, *dSums;
    CHECK(cudaMalloc(&dA, (size_t)N * N * sizeof(float)));
    CHECK(cudaMalloc(&dB, (size_t)N * N * sizeof(float)));
    CHECK(cudaMalloc(&dC, (size_t)N * N * sizeof(float)));
    CHECK(cudaMalloc(&dSums, (size_t)N * sizeof(float)));
    int block = 256;
    int grid1 = (count + block - 1) / block;
    fill_uniform<<<grid1, block>>>(dA, count, 1u);
    fill_uniform<<<grid1, block>>>(dB, count, 2u);
    dim3 block2(16, 16);
    dim3 grid2((n + 15) / 16, (n + 15) / 16);
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    CHECK(cudaEventRecord(t0));
    for (int p = 0; p < PRODUCTS; p++) {
        if (p > 0)
            rescale<<<grid1, block>>>(dC, dA, count, s);
        matmul<<<grid2, block2>>>(dA, dB, dC, n);
    }
    CHECK(cudaEventRecord(t1));
    row_abs_sums<<<(n + block - 1) / block, block>>>(dC, dSums, n);
    CHECK(cudaGetLastError());
    CHECK(cudaEventSynchronize(t1));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    // the check: sampled entries of the last product C = A B, A being the last rescaled operand
    float* row = (float*)std::malloc((size_t)n * sizeof(float));
    float* col = (float*)std::malloc((size_t)n * sizeof(float));
    int bad = 0;
    for (int t = 0; t < SAMPLES; t++) {
        int i = (int)((unsigned)(t * 7919 + 13) * 2654435761u % (unsigned)n);
        int j = (int)((unsigned)(t * 104729 + 7) * 40503u % (unsigned)n);
        float got;
        CHECK(cudaMemcpy(row, dA + (size_t)i * n, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy2D(col, sizeof(float), dB + j, (size_t)n * sizeof(float), sizeof(float), n, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&got, dC + (size_t)i * n + j, sizeof(float), cudaMemcpyDeviceToHost));
        double want = 0.0, mass = 0.0;
        for (int k = 0; k < n; k++) {
            want += (double)row[k] * col[k];
            mass += std::fabs((double)row[k] * col[k]);
        }
        // float accumulation over n terms: its rounding grows with the terms' magnitudes, not with the (possibly
        // cancelling) result; about 6e-4 here, against a tolerance near 0.07
        bad += std::fabs(want - got) > 1e-5 * mass + 1e-6;
    }
    // the fill: sampled entries of B (never written after its fill) against the same hash on the CPU
    int bad_fill = 0;
    for (int t = 0; t < SAMPLES; t++) {
        int j = (int)((unsigned)(t * 104729 + 7) * 40503u % (unsigned)n);
        CHECK(cudaMemcpy2D(col, sizeof(float), dB + j, (size_t)n * sizeof(float), sizeof(float), n, cudaMemcpyDeviceToHost));
        for (int k = 0; k < n; k += 997)
            bad_fill += col[k] != hash_uniform((unsigned)(k * n + j), 2u);
    }
    float* sums = (float*)std::malloc((size_t)n * sizeof(float));
    CHECK(cudaMemcpy(sums, dSums, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
    double checksum = 0.0;
    for (int r = 0; r < n; r++)
        checksum += sums[r];
    bad += bad_fill;
    std::printf("matmul_chain: %s (%d of %d sampled entries wrong) checksum %.6e\n", bad ? "FAIL" : "PASS", bad,
                SAMPLES, checksum);
    std::printf("matmul_chain: %d products of %d x %d in %.1f ms\n", PRODUCTS, n, n, ms);
    return bad != 0;
}
