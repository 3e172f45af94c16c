// sequence zoo: the Fisher-KPP reaction-diffusion equation in 1-D, stepped in time. Each step launches a 3-point
// diffusion stencil from one buffer into the other, then an elementwise logistic reaction on that output over the same
// index space, and swaps the buffers: a multi-kernel time step whose second kernel touches only the element its own
// thread's first-kernel body wrote (the two fuse into one launch).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define N 100003
#define STEPS 8000
#define D 0.2f
#define RATE 0.05f

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            std::exit(3);                                                                    \
        }                                                                                    \
    } while (0)

__global__ void diffuse(const float* u, float* v, int n, float d)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float left = i > 0 ? u[i - 1] : u[i];
    float right = i < n - 1 ? u[i + 1] : u[i];
    v[i] = u[i] + d * (left - 2.0f * u[i] + right);
}

__global__ void react(float* v, int n, float rate)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] += rate * v[i] * (1.0f - v[i]);
}

int main()
{
    float* h = (float*)std::malloc(N * sizeof(float));
    for (int i = 0; i < N; i++)
        h[i] = i < N / 10 ? 1.0f : (i % 997 == 0 ? 0.5f : 0.0f);
    float *d_u, *d_v;
    CHECK(cudaMalloc(&d_u, N * sizeof(float)));
    CHECK(cudaMalloc(&d_v, N * sizeof(float)));
    CHECK(cudaMemcpy(d_u, h, N * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_v, 0, N * sizeof(float)));
    const int block = 128;
    const int grid = (N + block - 1) / block;
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    CHECK(cudaEventRecord(t0));
    for (int t = 0; t < STEPS; t++) {
        diffuse<<<grid, block>>>(d_u, d_v, N, D);
        react<<<grid, block>>>(d_v, N, RATE);
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
        for (int i = 0; i < N; i++) {
            float left = i > 0 ? a[i - 1] : a[i];
            float right = i < N - 1 ? a[i + 1] : a[i];
            b[i] = a[i] + D * (left - 2.0f * a[i] + right);
            b[i] += RATE * b[i] * (1.0f - b[i]);
        }
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
    std::printf("fisher1d_steps: %s (%d of %d values wrong) checksum %.6e, %d steps in %.3f ms\n", bad ? "FAILED" : "ok", bad,
                N, sum, STEPS, ms);
    return bad != 0;
}
