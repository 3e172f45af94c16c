// sequence zoo: a damped 2-D wave equation stepped in time. Three buffers rotate (previous, current, next) and each step
// launches two short kernels: the 5-point update over a 2-D grid of blocks, then a 1-D kernel that clamps the four
// edges. A launch-bound time loop whose pointer arguments repeat every three steps.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define NX 256
#define NY 256
#define STEPS 5000
#define C2 0.2f
#define DAMP 0.9995f

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            std::exit(3);                                                                    \
        }                                                                                    \
    } while (0)

__global__ void wave_step(const float* prev, const float* cur, float* next, int nx, int ny, float c2)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1)
        return;
    int c = y * nx + x;
    float lap = cur[c - 1] + cur[c + 1] + cur[c - nx] + cur[c + nx] - 4.0f * cur[c];
    next[c] = DAMP * (2.0f * cur[c] - prev[c] + c2 * lap);
}

__global__ void wave_edges(float* next, int nx, int ny)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < nx) {
        next[k] = 0.0f;
        next[(ny - 1) * nx + k] = 0.0f;
    } else if (k < nx + ny) {
        next[(k - nx) * nx] = 0.0f;
        next[(k - nx) * nx + nx - 1] = 0.0f;
    }
}

static void step_on_host(const float* prev, const float* cur, float* next)
{
    for (int y = 1; y < NY - 1; y++)
        for (int x = 1; x < NX - 1; x++) {
            int c = y * NX + x;
            float lap = cur[c - 1] + cur[c + 1] + cur[c - NX] + cur[c + NX] - 4.0f * cur[c];
            next[c] = DAMP * (2.0f * cur[c] - prev[c] + C2 * lap);
        }
    for (int k = 0; k < NX; k++)
        next[k] = next[(NY - 1) * NX + k] = 0.0f;
    for (int k = 0; k < NY; k++)
        next[k * NX] = next[k * NX + NX - 1] = 0.0f;
}

int main()
{
    const size_t n = (size_t)NX * NY;
    float* h[3];
    for (int b = 0; b < 3; b++)
        h[b] = (float*)std::calloc(n, sizeof(float));
    for (int y = 1; y < NY - 1; y++)
        for (int x = 1; x < NX - 1; x++) {
            float dx = (x - NX / 3) / 12.0f, dy = (y - NY / 2) / 12.0f;
            h[0][y * NX + x] = h[1][y * NX + x] = std::exp(-(dx * dx + dy * dy));
        }
    float *d_prev, *d_cur, *d_next;
    CHECK(cudaMalloc(&d_prev, n * sizeof(float)));
    CHECK(cudaMalloc(&d_cur, n * sizeof(float)));
    CHECK(cudaMalloc(&d_next, n * sizeof(float)));
    CHECK(cudaMemcpy(d_prev, h[0], n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_cur, h[1], n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_next, 0, n * sizeof(float)));
    dim3 block(32, 8);
    dim3 grid((NX + block.x - 1) / block.x, (NY + block.y - 1) / block.y);
    int edge_blocks = (NX + NY + 127) / 128;
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    CHECK(cudaEventRecord(t0));
    for (int t = 0; t < STEPS; t++) {
        wave_step<<<grid, block>>>(d_prev, d_cur, d_next, NX, NY, C2);
        wave_edges<<<edge_blocks, 128>>>(d_next, NX, NY);
        float* oldest = d_prev;
        d_prev = d_cur;
        d_cur = d_next;
        d_next = oldest;
    }
    CHECK(cudaEventRecord(t1));
    CHECK(cudaEventSynchronize(t1));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    float* got = (float*)std::malloc(n * sizeof(float));
    CHECK(cudaMemcpy(got, d_cur, n * sizeof(float), cudaMemcpyDeviceToHost));
    float *p = h[0], *c = h[1], *q = h[2];
    for (int t = 0; t < STEPS; t++) {
        step_on_host(p, c, q);
        float* oldest = p;
        p = c;
        c = q;
        q = oldest;
    }
    int bad = 0;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        sum += got[i];
        bad += std::fabs(got[i] - c[i]) > 1e-3f * (1.0f + std::fabs(c[i]));
    }
    std::printf("wave2d_steps: %s (%d of %zu values wrong) checksum %.6e, %d steps in %.3f ms\n", bad ? "FAILED" : "ok", bad, n,
                sum, STEPS, ms);
    return bad != 0;
}
