// particles_struct_cuda: a small N-body-free particle integrator whose kernels take their state as a
// struct passed by value holding device pointers (a pattern of Monte Carlo and particle codes).
//
//   ./particles [n] [steps]      prints the checksum of the final positions
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#ifndef BLOCK
#define BLOCK 128
#endif

struct Field {
    const float* gx;  // force field samples, one per cell
    int cells;
    float scale;
};

struct Particles {
    float* x;          // positions
    float* v;          // velocities
    const float* mass;
    int n;
    float dt;
    Field field;       // a nested struct by value, itself holding a device pointer
};

__global__ void advance(Particles p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    int cell = (int)(fabsf(p.x[i]) * p.field.scale) % p.field.cells;
    float a = p.field.gx[cell] / p.mass[i];
    p.v[i] = 0.999f * p.v[i] + a * p.dt;
    p.x[i] += p.v[i] * p.dt;
}

static void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100000;
    int steps = argc > 2 ? atoi(argv[2]) : 20;
    const int cells = 1024;
    std::vector<float> x(n), v(n), mass(n), gx(cells);
    for (int i = 0; i < n; ++i) {
        x[i] = (float)(i % 977) * 0.01f;
        v[i] = 0.0f;
        mass[i] = 1.0f + (float)(i % 13);
    }
    for (int c = 0; c < cells; ++c) gx[c] = (float)((c * 37) % 101 - 50) * 0.1f;
    Particles p;
    p.n = n;
    p.dt = 0.01f;
    p.field.cells = cells;
    p.field.scale = 10.0f;
    float* gx_d = nullptr;
    check(cudaMalloc((void**)&p.x, n * sizeof(float)), "cudaMalloc x");
    check(cudaMalloc((void**)&p.v, n * sizeof(float)), "cudaMalloc v");
    check(cudaMalloc((void**)&p.mass, n * sizeof(float)), "cudaMalloc mass");
    check(cudaMalloc((void**)&gx_d, cells * sizeof(float)), "cudaMalloc gx");
    p.field.gx = gx_d;
    check(cudaMemcpy(p.x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy x");
    check(cudaMemcpy(p.v, v.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy v");
    check(cudaMemcpy((void*)p.mass, mass.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy mass");
    check(cudaMemcpy(gx_d, gx.data(), cells * sizeof(float), cudaMemcpyHostToDevice), "copy gx");
    int blocks = (n + BLOCK - 1) / BLOCK;
    for (int s = 0; s < steps; ++s) {
        advance<<<blocks, BLOCK>>>(p);
    }
    check(cudaDeviceSynchronize(), "kernel");
    check(cudaMemcpy(x.data(), p.x, n * sizeof(float), cudaMemcpyDeviceToHost), "copy back");
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += x[i];
    printf("particles %d steps %d checksum %.6f\n", n, steps, sum);
    cudaFree(p.x);
    cudaFree(p.v);
    cudaFree((void*)p.mass);
    cudaFree(gx_d);
    return 0;
}
