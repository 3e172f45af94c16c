/*
 * hip_particles - a small HIP n-body mini-app.
 *
 * NBODY bodies in a reflecting box interact through softened gravity
 * (direct all-pairs summation).  After the time loop the bodies are
 * deposited on an NGRID^3 density grid, their speeds are binned into a
 * histogram and the kinetic energy is reduced.  Each result is printed as
 *   checksum <name> = <value>
 */
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "config.h"
#include "hip_check.h"
#include "particles.h"

/* deterministic LCG, uniform in [0, 1) */
static float lcg01(unsigned int& state)
{
    state = state * 1664525u + 1013904223u;
    return (float)(state >> 8) * (1.0f / 16777216.0f);
}

static void print_checksum(const char* name, double value)
{
    std::printf("checksum %s = %.6e\n", name, value);
}

/* bodies uniformly inside a sphere of radius R, slowly rotating about z */
static void init_bodies(std::vector<float4>& pos, std::vector<float4>& vel, float R)
{
    unsigned int seed = 2024u;
    const int n = (int)pos.size();
    for (int i = 0; i < n; ++i) {
        float x, y, z;
        do {
            x = 2.0f * lcg01(seed) - 1.0f;
            y = 2.0f * lcg01(seed) - 1.0f;
            z = 2.0f * lcg01(seed) - 1.0f;
        } while (x * x + y * y + z * z > 1.0f);
        pos[i] = make_float4(R * x, R * y, R * z, 1.0f / n);
        vel[i] = make_float4(-0.3f * y, 0.3f * x, 0.0f, 0.0f);
    }
}

int main()
{
    const int n = NBODY;

    hipDeviceProp_t prop;
    HIP_CHECK(hipSetDevice(0));
    HIP_CHECK(hipGetDeviceProperties(&prop, 0));
    std::printf("hip_particles on %s (NBODY=%d, NSTEPS=%d, NGRID=%d, NBINS=%d)\n",
                prop.name, NBODY, NSTEPS, NGRID, NBINS);

    SimParams sp;
    sp.dt      = 1.0e-3f;
    sp.box     = 2.0f;
    sp.damping = 0.9999f;
    const float soft2 = 1.0e-2f;
    const float G = 1.0f;

    GridSpec gs;
    gs.n        = NGRID;
    gs.lo       = -sp.box;
    gs.inv_cell = NGRID / (2.0f * sp.box);
    gs.cell_vol = powf(2.0f * sp.box / NGRID, 3.0f);
    const int ncells = NGRID * NGRID * NGRID;

    /* quadratic bin edges: finer resolution at low speeds */
    std::vector<float> edges(NBINS + 1);
    const float vmax = 2.0f;
    for (int b = 0; b <= NBINS; ++b) {
        float t = (float)b / NBINS;
        edges[b] = vmax * t * t;
    }
    set_histogram_edges(edges.data(), NBINS);

    std::vector<float4> h_pos(n), h_vel(n), h_acc(n);
    init_bodies(h_pos, h_vel, 1.0f);

    float4 *d_pos, *d_vel, *d_acc;
    float *d_rho, *d_ke;
    unsigned int* d_hist;
    HIP_CHECK(hipMalloc(&d_pos, (size_t)n * sizeof(float4)));
    HIP_CHECK(hipMalloc(&d_vel, (size_t)n * sizeof(float4)));
    HIP_CHECK(hipMalloc(&d_acc, (size_t)n * sizeof(float4)));
    HIP_CHECK(hipMalloc(&d_rho, (size_t)NGRID * NGRID * NGRID * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_hist, NBINS * sizeof(unsigned int)));
    HIP_CHECK(hipMalloc(&d_ke, sizeof(float)));

    HIP_CHECK(hipMemcpy(d_pos, h_pos.data(), (size_t)n * sizeof(float4), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(d_vel, h_vel.data(), (size_t)n * sizeof(float4), hipMemcpyHostToDevice));

    const int threads = BLOCK_SIZE;
    const int blocks = (n + threads - 1) / threads;

    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    HIP_CHECK(hipEventRecord(start, 0));

    /* ---- time loop ---------------------------------------------------- */
    for (int step = 0; step < NSTEPS; ++step) {
        hipLaunchKernelGGL(compute_forces_naive, dim3(blocks), dim3(threads), 0, 0,
                           d_pos, d_acc, n, soft2, G);
        HIP_CHECK(hipGetLastError());

        integrate_bodies<<<blocks, threads>>>(d_pos, d_vel, d_acc, n, sp);
        HIP_CHECK(hipGetLastError());
    }

    /* ---- diagnostics -------------------------------------------------- */
    HIP_CHECK(hipMemset(d_rho, 0, (size_t)ncells * sizeof(float)));
    HIP_CHECK(hipMemset(d_hist, 0, NBINS * sizeof(unsigned int)));
    HIP_CHECK(hipMemset(d_ke, 0, sizeof(float)));

    hipLaunchKernelGGL(deposit_density, dim3(blocks), dim3(threads), 0, 0,
                       d_pos, d_rho, n, gs);
    HIP_CHECK(hipGetLastError());

    speed_histogram<<<dim3(blocks), dim3(threads)>>>(d_vel, d_hist, n, NBINS);
    HIP_CHECK(hipGetLastError());

    hipLaunchKernelGGL(kinetic_energy, dim3(blocks), dim3(threads),
                       threads * sizeof(float), 0, d_pos, d_vel, d_ke, n);
    HIP_CHECK(hipGetLastError());

    HIP_CHECK(hipEventRecord(stop, 0));
    HIP_CHECK(hipEventSynchronize(stop));
    HIP_CHECK(hipDeviceSynchronize());
    float ms = 0.0f;
    HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
    std::printf("%d steps: %.3f ms (%.2f Ginteractions/s)\n", NSTEPS, ms,
                1.0e-6 * (double)n * n * NSTEPS / (ms > 0.0f ? ms : 1.0f));

    /* ---- results ------------------------------------------------------- */
    std::vector<float> h_rho(ncells);
    std::vector<unsigned int> h_hist(NBINS);
    float h_ke = 0.0f;
    HIP_CHECK(hipMemcpy(h_pos.data(), d_pos, (size_t)n * sizeof(float4), hipMemcpyDeviceToHost));
    HIP_CHECK(hipMemcpy(h_vel.data(), d_vel, (size_t)n * sizeof(float4), hipMemcpyDeviceToHost));
    HIP_CHECK(hipMemcpy(h_acc.data(), d_acc, (size_t)n * sizeof(float4), hipMemcpyDeviceToHost));
    HIP_CHECK(hipMemcpy(h_rho.data(), d_rho, (size_t)ncells * sizeof(float), hipMemcpyDeviceToHost));
    HIP_CHECK(hipMemcpy(h_hist.data(), d_hist, NBINS * sizeof(unsigned int), hipMemcpyDeviceToHost));
    HIP_CHECK(hipMemcpy(&h_ke, d_ke, sizeof(float), hipMemcpyDeviceToHost));

    double s_acc = 0.0, s_pos = 0.0, s_vel = 0.0, s_rho = 0.0, s_hist = 0.0;
    for (int i = 0; i < n; ++i) {
        /* weight by index so that a permutation changes the sum */
        double w = 1.0 + (i % 17);
        s_acc += w * ((double)h_acc[i].x + (double)h_acc[i].y + (double)h_acc[i].z);
        s_pos += w * ((double)h_pos[i].x + (double)h_pos[i].y + (double)h_pos[i].z);
        s_vel += w * ((double)h_vel[i].x + (double)h_vel[i].y + (double)h_vel[i].z);
    }
    for (int c = 0; c < ncells; ++c) s_rho += (double)h_rho[c] * (1.0 + (c % 13));
    for (int b = 0; b < NBINS; ++b) s_hist += (double)h_hist[b] * (b + 1);

    print_checksum("compute_forces_naive", s_acc);
    print_checksum("integrate_pos", s_pos);
    print_checksum("integrate_vel", s_vel);
    print_checksum("deposit_density", s_rho);
    print_checksum("speed_histogram", s_hist);
    print_checksum("kinetic_energy", (double)h_ke);

    HIP_CHECK(hipEventDestroy(start));
    HIP_CHECK(hipEventDestroy(stop));
    HIP_CHECK(hipFree(d_pos));
    HIP_CHECK(hipFree(d_vel));
    HIP_CHECK(hipFree(d_acc));
    HIP_CHECK(hipFree(d_rho));
    HIP_CHECK(hipFree(d_hist));
    HIP_CHECK(hipFree(d_ke));
    return 0;
}
