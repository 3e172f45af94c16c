// sequence zoo: a 1-D heat equation stepped in time. The host loop launches two short kernels per step (a 3-point
// stencil between ping-pong buffers, then a one-thread source whose amplitude follows the time index): the shape of
// the launch-bound time loops of real stencil codes, where each launch runs a few microseconds.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define N (1 << 16)
#define STEPS 10000
#define R 0.25f
#define AMP 0.5f

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            std::exit(3);                                                                    \
        }                                                                                    \
    } while (0)

__global__ void heat_step(const float* u, float* v, int n, float r)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float left = i > 0 ? u[i - 1] : u[i];  // insulated ends
    float right = i < n - 1 ? u[i + 1] : u[i];
    v[i] = u[i] + r * (left - 2.0f * u[i] + right);
}

__global__ void heat_source(float* v, int at, int t, float amp)
{
    if (blockIdx.x * blockDim.x + threadIdx.x == 0)
        v[at] += amp * sinf(0.001f * (float)t);
}

static void step_on_host(const float* u, float* v, int n, int t)
{
    for (int i = 0; i < n; i++) {
        float left = i > 0 ? u[i - 1] : u[i];
        float right = i < n - 1 ? u[i + 1] : u[i];
        v[i] = u[i] + R * (left - 2.0f * u[i] + right);
    }
    v[n / 3] += AMP * std::sin(0.001f * (float)t);
}

int main()
{
    float* h = (float*)std::malloc(N * sizeof(float));
    unsigned s = 12345u;
    for (int i = 0; i < N; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = (float)(s >> 8) / 16777216.0f;
    }
    float *d_u, *d_v;
    CHECK(cudaMalloc(&d_u, N * sizeof(float)));
    CHECK(cudaMalloc(&d_v, N * sizeof(float)));
    CHECK(cudaMemcpy(d_u, h, N * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_v, 0, N * sizeof(float)));
    int block = 256;
    int grid = (N + block - 1) / block;
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    CHECK(cudaEventRecord(t0));
    for (int t = 0; t < STEPS; t++) {
        heat_step<<<grid, block>>>(d_u, d_v, N, R);
        heat_source<<<1, 32>>>(d_v, N / 3, t, AMP);
        float* swap = d_u;
        d_u = d_v;
        d_v = swap;
    }
    CHECK(cudaEventRecord(t1));
    CHECK(cudaEventSynchronize(t1));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    float* got = (float*)std::malloc(N * sizeof(float));
    CHECK(cudaMemcpy(got, d_u, N * sizeof(float), cudaMemcpyDeviceToHost));
    float* a = h;
    float* b = (float*)std::malloc(N * sizeof(float));
    for (int t = 0; t < STEPS; t++) {
        step_on_host(a, b, N, t);
        float* swap = a;
        a = b;
        b = swap;
    }
    int bad = 0;
    double sum = 0.0;
    for (int i = 0; i < N; i++) {
        sum += got[i];
        bad += std::fabs(got[i] - a[i]) > 1e-3f * (1.0f + std::fabs(a[i]));
    }
    std::printf("heat1d_steps: %s (%d of %d values wrong) checksum %.6e, %d steps in %.3f ms\n", bad ? "FAILED" : "ok", bad,
                N, sum, STEPS, ms);
    return bad != 0;
}
