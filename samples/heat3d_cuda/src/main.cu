/*
 * heat3d - a small CUDA mini-app with three phases:
 *
 *   1. dense linear algebra on MAT_N x MAT_N matrices
 *      (matrix product, matrix-vector product, transpose, column sums)
 *   2. explicit 3-D heat diffusion on an NX x NY x NZ grid with a heat
 *      source, followed by an energy reduction
 *   3. NPART tracer particles driven by buoyancy in the temperature field
 *
 * Every kernel output is reduced to a checksum on the host and printed as
 *   checksum <name> = <value>
 * so that any change in a kernel's results is visible in the output.
 */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "config.h"
#include "cuda_check.h"
#include "constants.cuh"
#include "physics.cuh"
#include "kernels.cuh"
#include "blas1.cuh"

/* ------------------------------------------------------------------ */
/* host helpers                                                        */
/* ------------------------------------------------------------------ */

/* small deterministic linear congruential generator in [-1, 1) */
static float lcg_uniform(unsigned int& state)
{
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

static double checksum(const float* v, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += (double)v[i];
    return s;
}

static void print_checksum(const char* name, double value)
{
    std::printf("checksum %s = %.6e\n", name, value);
}

/* ------------------------------------------------------------------ */
/* phase 1: linear algebra                                             */
/* ------------------------------------------------------------------ */

static void run_linalg(cudaEvent_t t0, cudaEvent_t t1)
{
    const int N = MAT_N;
    const size_t mat_bytes = (size_t)N * N * sizeof(float);
    const size_t vec_bytes = (size_t)N * sizeof(float);

    std::vector<float> h_A((size_t)N * N), h_B((size_t)N * N), h_x(N);
    unsigned int seed = 12345u;
    for (size_t i = 0; i < h_A.size(); ++i) h_A[i] = lcg_uniform(seed);
    for (size_t i = 0; i < h_B.size(); ++i) h_B[i] = lcg_uniform(seed);
    for (int i = 0; i < N; ++i) h_x[i] = lcg_uniform(seed);

    float *d_A, *d_B, *d_C, *d_At, *d_x, *d_y, *d_colsum;
    CUDA_CHECK(cudaMalloc(&d_A, (size_t)N * N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_B, (size_t)N * N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_C, (size_t)N * N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_At, (size_t)N * N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_x, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_y, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_colsum, N * sizeof(float)));

    CUDA_CHECK(cudaMemcpy(d_A, h_A.data(), mat_bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_B, h_B.data(), mat_bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_x, h_x.data(), vec_bytes, cudaMemcpyHostToDevice));

    CUDA_CHECK(cudaEventRecord(t0));

    /* C = A * B */
    dim3 block2d(16, 16);
    dim3 grid2d((N + block2d.x - 1) / block2d.x, (N + block2d.y - 1) / block2d.y);
    linalg::matmul_naive<<<grid2d, block2d>>>(d_A, d_B, d_C, N);
    CUDA_CHECK_LAUNCH();

    /* y = A * x */
    dim3 block1d(BLOCK_1D);
    dim3 grid1d((int)ceil((float)N / block1d.x));
    linalg::matvec_rows<<<grid1d, block1d>>>(d_A, d_x, d_y, N);
    CUDA_CHECK_LAUNCH();

    /* At = A^T, i.e. A in column-major order, then its column sums */
    linalg::transpose_naive<<<grid2d, block2d>>>(d_A, d_At, N);
    CUDA_CHECK_LAUNCH();
    linalg::colsum_strided<<<grid1d, block1d>>>(d_At, d_colsum, N);
    CUDA_CHECK_LAUNCH();

    CUDA_CHECK(cudaEventRecord(t1));
    CUDA_CHECK(cudaEventSynchronize(t1));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
    std::printf("linalg phase (N=%d): %.3f ms\n", N, ms);

    std::vector<float> h_C((size_t)N * N), h_At((size_t)N * N), h_y(N), h_cs(N);
    CUDA_CHECK(cudaMemcpy(h_C.data(), d_C, mat_bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_At.data(), d_At, mat_bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_y.data(), d_y, vec_bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_cs.data(), d_colsum, vec_bytes, cudaMemcpyDeviceToHost));

    /* weight the transpose checksum by position so a plain copy differs */
    double tsum = 0.0;
    for (size_t i = 0; i < h_At.size(); ++i) tsum += (double)h_At[i] * (double)(i % 7 + 1);

    print_checksum("matmul_naive", checksum(h_C.data(), h_C.size()));
    print_checksum("matvec_rows", checksum(h_y.data(), h_y.size()));
    print_checksum("transpose_naive", tsum);
    print_checksum("colsum_strided", checksum(h_cs.data(), h_cs.size()));

    CUDA_CHECK(cudaFree(d_A));
    CUDA_CHECK(cudaFree(d_B));
    CUDA_CHECK(cudaFree(d_C));
    CUDA_CHECK(cudaFree(d_At));
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    CUDA_CHECK(cudaFree(d_colsum));
}

/* ------------------------------------------------------------------ */
/* phases 2 and 3: heat diffusion and particles                        */
/* ------------------------------------------------------------------ */

static void init_temperature(std::vector<float>& u, std::vector<float>& src)
{
    const float cx = 0.5f * NX, cy = 0.5f * NY, cz = 0.5f * NZ;
    const float r2 = 0.0625f * (float)(NX * NX);   /* (NX/4)^2 */
    for (int k = 0; k < NZ; ++k)
        for (int j = 0; j < NY; ++j)
            for (int i = 0; i < NX; ++i) {
                size_t c = ((size_t)k * NY + j) * NX + i;
                float dx = i - cx, dy = j - cy, dz = k - cz;
                float d2 = dx * dx + dy * dy + dz * dz;
                u[c]   = 20.0f + 80.0f * expf(-d2 / r2);
                /* a heated plate near the bottom of the box */
                src[c] = (k >= 1 && k <= 3 && fabsf(dx) < 0.25f * NX && fabsf(dy) < 0.25f * NY)
                         ? 5.0f : 0.0f;
            }
}

static void init_particles(std::vector<Particle>& parts, float dx)
{
    unsigned int seed = 777u;
    for (size_t p = 0; p < parts.size(); ++p) {
        Particle& q = parts[p];
        q.x  = (0.5f + 0.5f * lcg_uniform(seed)) * NX * dx;
        q.y  = (0.5f + 0.5f * lcg_uniform(seed)) * NY * dx;
        q.z  = (0.5f + 0.5f * lcg_uniform(seed)) * NZ * dx;
        q.vx = 0.1f * lcg_uniform(seed);
        q.vy = 0.1f * lcg_uniform(seed);
        q.vz = 0.1f * lcg_uniform(seed);
        q.m  = 1.0f + 0.5f * lcg_uniform(seed);
        q.T  = 20.0f;
    }
}

static void run_heat_and_particles(cudaEvent_t t0, cudaEvent_t t1)
{
    const int ncell = NX * NY * NZ;
    const size_t grid_bytes = (size_t)NX * NY * NZ * sizeof(float);

    Params prm;
    prm.dt       = 0.1f;
    prm.alpha    = 1.0f;
    prm.dx       = 1.0f;
    prm.gravity  = 9.81f;
    prm.buoyancy = 0.2f;
    prm.drag     = 0.5f;
    prm.t_ref    = 20.0f;

    /* Laplacian weights: centre, -x, +x, -y, +y, -z, +z */
    const float h_coeffs[STENCIL_NCOEFF] = {-6.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
    upload_stencil_coeffs(h_coeffs);

    std::vector<float> h_u(ncell), h_src(ncell);
    init_temperature(h_u, h_src);
    std::vector<Particle> h_parts(NPART);
    init_particles(h_parts, prm.dx);

    float *d_u, *d_u_new, *d_src, *d_energy;
    Particle* d_parts;
    CUDA_CHECK(cudaMalloc(&d_u, (size_t)NX * NY * NZ * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_u_new, (size_t)NX * NY * NZ * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_src, (size_t)NX * NY * NZ * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_energy, sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_parts, (size_t)NPART * sizeof(Particle)));

    CUDA_CHECK(cudaMemcpy(d_u, h_u.data(), grid_bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_u_new, h_u.data(), grid_bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_src, h_src.data(), grid_bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_parts, h_parts.data(), (size_t)NPART * sizeof(Particle),
                          cudaMemcpyHostToDevice));

    dim3 block(8, 8, 8);
    dim3 grid((NX + block.x - 1) / block.x,
              (NY + block.y - 1) / block.y,
              (NZ + block.z - 1) / block.z);
    int pblocks = (NPART + BLOCK_1D - 1) / BLOCK_1D;

    CUDA_CHECK(cudaEventRecord(t0));
    for (int step = 0; step < STEPS; ++step) {
        /* diffusion */
        stencil7<<<grid, block>>>(d_u, d_u_new, NX, NY, NZ, prm);
        CUDA_CHECK_LAUNCH();

        /* heat source: u_new = dt * src + 1 * u_new */
        axpby_t<float, 256><<<(ncell + 255) / 256, 256>>>(prm.dt, d_src, 1.0f, d_u_new, ncell);
        CUDA_CHECK_LAUNCH();

        float* tmp = d_u; d_u = d_u_new; d_u_new = tmp;

        /* tracer particles in the updated field */
        particles_step<<<pblocks, BLOCK_1D>>>(d_parts, NPART, d_u, NX, NY, NZ, prm);
        CUDA_CHECK_LAUNCH();
    }

    CUDA_CHECK(cudaMemset(d_energy, 0, sizeof(float)));
    reduce_energy<<<(ncell + BLOCK_1D - 1) / BLOCK_1D, BLOCK_1D>>>(d_u, d_energy, ncell);
    CUDA_CHECK_LAUNCH();

    CUDA_CHECK(cudaEventRecord(t1));
    CUDA_CHECK(cudaEventSynchronize(t1));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
    std::printf("heat phase (%dx%dx%d, %d steps, %d particles): %.3f ms\n",
                NX, NY, NZ, STEPS, NPART, ms);

    float h_energy = 0.0f;
    CUDA_CHECK(cudaMemcpy(h_u.data(), d_u, grid_bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&h_energy, d_energy, sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_parts.data(), d_parts, (size_t)NPART * sizeof(Particle),
                          cudaMemcpyDeviceToHost));

    double ppos = 0.0, pvel = 0.0, ptemp = 0.0;
    for (size_t p = 0; p < h_parts.size(); ++p) {
        const Particle& q = h_parts[p];
        ppos  += (double)q.x + (double)q.y + (double)q.z;
        pvel  += (double)q.vx + (double)q.vy + (double)q.vz;
        ptemp += (double)q.T;
    }

    print_checksum("heat_field", checksum(h_u.data(), h_u.size()));
    print_checksum("reduce_energy", (double)h_energy);
    print_checksum("particles_pos", ppos);
    print_checksum("particles_vel", pvel);
    print_checksum("particles_temp", ptemp);

    CUDA_CHECK(cudaFree(d_u));
    CUDA_CHECK(cudaFree(d_u_new));
    CUDA_CHECK(cudaFree(d_src));
    CUDA_CHECK(cudaFree(d_energy));
    CUDA_CHECK(cudaFree(d_parts));
}

int main()
{
    int dev = 0;
    cudaDeviceProp prop;
    CUDA_CHECK(cudaSetDevice(dev));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    std::printf("heat3d on %s (MAT_N=%d, grid %dx%dx%d, STEPS=%d, NPART=%d)\n",
                prop.name, MAT_N, NX, NY, NZ, STEPS, NPART);

    cudaEvent_t t0, t1;
    CUDA_CHECK(cudaEventCreate(&t0));
    CUDA_CHECK(cudaEventCreate(&t1));

    run_linalg(t0, t1);
    run_heat_and_particles(t0, t1);

    CUDA_CHECK(cudaEventDestroy(t0));
    CUDA_CHECK(cudaEventDestroy(t1));
    CUDA_CHECK(cudaDeviceReset());
    return 0;
}
