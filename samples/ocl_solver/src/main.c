/*
 * ocl_solver - a small OpenCL mini-app.
 *
 *   1. y = A x          (kernel matvec,   kernels/linalg.cl)
 *   2. C = A B          (kernel matmul,   kernels/linalg.cl)
 *   3. JACOBI_ITERS Jacobi sweeps for -lap(u) = f on a PROB_N^2 grid
 *                       (kernel jacobi2d, kernels/stencil.cl)
 *   4. residual norm    (kernel residual_norm, kernels/stencil.cl)
 *
 * Usage: ocl_solver [-k kernel_dir] [-n size] [-i iterations]
 * Each result is printed as "checksum <name> = <value>".
 */
#define _POSIX_C_SOURCE 199309L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "cl_util.h"

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1.0e-9 * (double)ts.tv_nsec;
}

/* deterministic LCG, uniform in [-1, 1) */
static float lcg_uniform(unsigned int* state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

static double checksum(const float* v, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += (double)v[i];
    return s;
}

static size_t round_up(size_t x, size_t m)
{
    return (x + m - 1) / m * m;
}

int main(int argc, char** argv)
{
    const char* kernel_dir = "kernels";
    int n = PROB_N;
    int iters = JACOBI_ITERS;

    for (int a = 1; a < argc; ++a) {
        if (!strcmp(argv[a], "-k") && a + 1 < argc)      kernel_dir = argv[++a];
        else if (!strcmp(argv[a], "-n") && a + 1 < argc) n = atoi(argv[++a]);
        else if (!strcmp(argv[a], "-i") && a + 1 < argc) iters = atoi(argv[++a]);
        else {
            fprintf(stderr, "usage: %s [-k kernel_dir] [-n size] [-i iterations]\n", argv[0]);
            return EXIT_FAILURE;
        }
    }

    cl_env env;
    memset(&env, 0, sizeof(env));
    if (cl_env_init(&env) != 0) return EXIT_FAILURE;
    printf("ocl_solver on '%s' / '%s' (n=%d, iters=%d, WG_SIZE=%d)\n",
           env.platform_name, env.device_name, n, iters, WG_SIZE);

    cl_int err;

    /* ---- programs and kernels ---------------------------------------- */
    char stencil_opts[256];
    snprintf(stencil_opts, sizeof(stencil_opts), "-DREAL=float -DWG_SIZE=%d", WG_SIZE);

    cl_program prog_linalg  = cl_build_program_from_file(&env, kernel_dir, "linalg.cl",
                                                         "-DREAL=float");
    cl_program prog_stencil = cl_build_program_from_file(&env, kernel_dir, "stencil.cl",
                                                         stencil_opts);

    cl_kernel k_matvec = clCreateKernel(prog_linalg, "matvec", &err);
    CHECK(err, "clCreateKernel(matvec)");
    cl_kernel k_matmul = clCreateKernel(prog_linalg, "matmul", &err);
    CHECK(err, "clCreateKernel(matmul)");
    cl_kernel k_jacobi = clCreateKernel(prog_stencil, "jacobi2d", &err);
    CHECK(err, "clCreateKernel(jacobi2d)");
    cl_kernel k_resid = clCreateKernel(prog_stencil, "residual_norm", &err);
    CHECK(err, "clCreateKernel(residual_norm)");

    /* ---- host data ----------------------------------------------------- */
    float* A = (float*)malloc(sizeof(float) * n * n);
    float* B = (float*)malloc(sizeof(float) * n * n);
    float* C = (float*)malloc(sizeof(float) * n * n);
    float* x = (float*)malloc(sizeof(float) * n);
    float* y = (float*)malloc(sizeof(float) * n);
    float* u = (float*)malloc(sizeof(float) * n * n);
    float* f = (float*)malloc(sizeof(float) * n * n);

    unsigned int seed = 4242u;
    for (int i = 0; i < n * n; ++i) A[i] = lcg_uniform(&seed);
    for (int i = 0; i < n * n; ++i) B[i] = lcg_uniform(&seed);
    for (int i = 0; i < n; ++i)     x[i] = lcg_uniform(&seed);

    /* Poisson problem on the unit square: u = 1 on the top edge, 0 on the
     * other edges, source f = sin(pi x) sin(pi y) */
    const float h = 1.0f / (float)(n - 1);
    const float pi = 3.14159265358979f;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            u[i * n + j] = (i == 0) ? 1.0f : 0.0f;
            f[i * n + j] = sinf(pi * j * h) * sinf(pi * i * h);
        }

    /* ---- device buffers ------------------------------------------------ */
    cl_mem d_A = clCreateBuffer(env.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                sizeof(float) * n * n, A, &err);
    CHECK(err, "clCreateBuffer(A)");
    cl_mem d_B = clCreateBuffer(env.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                sizeof(float) * n * n, B, &err);
    CHECK(err, "clCreateBuffer(B)");
    cl_mem d_C = clCreateBuffer(env.context, CL_MEM_READ_WRITE,
                                sizeof(float) * n * n, NULL, &err);
    CHECK(err, "clCreateBuffer(C)");
    cl_mem d_x = clCreateBuffer(env.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                sizeof(float) * n, x, &err);
    CHECK(err, "clCreateBuffer(x)");
    cl_mem d_y = clCreateBuffer(env.context, CL_MEM_WRITE_ONLY,
                                sizeof(float) * n, NULL, &err);
    CHECK(err, "clCreateBuffer(y)");
    cl_mem d_u = clCreateBuffer(env.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                sizeof(float) * n * n, u, &err);
    CHECK(err, "clCreateBuffer(u)");
    cl_mem d_u_new = clCreateBuffer(env.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                    sizeof(float) * n * n, u, &err);
    CHECK(err, "clCreateBuffer(u_new)");
    cl_mem d_f = clCreateBuffer(env.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                sizeof(float) * n * n, f, &err);
    CHECK(err, "clCreateBuffer(f)");

    size_t resid_global = round_up((size_t)n * n, WG_SIZE);
    size_t resid_local  = WG_SIZE;
    size_t ngroups = resid_global / resid_local;
    float* partial = (float*)malloc(sizeof(float) * ngroups);
    cl_mem d_partial = clCreateBuffer(env.context, CL_MEM_WRITE_ONLY,
                                      sizeof(float) * ngroups, NULL, &err);
    CHECK(err, "clCreateBuffer(partial)");

    double t0, t1;

    /* ---- 1. matvec ------------------------------------------------------ */
    t0 = now_sec();
    CHECK(clSetKernelArg(k_matvec, 0, sizeof(cl_mem), &d_A), "arg matvec 0");
    CHECK(clSetKernelArg(k_matvec, 1, sizeof(cl_mem), &d_x), "arg matvec 1");
    CHECK(clSetKernelArg(k_matvec, 2, sizeof(cl_mem), &d_y), "arg matvec 2");
    CHECK(clSetKernelArg(k_matvec, 3, sizeof(int), &n), "arg matvec 3");
    size_t global = (size_t)n;
    CHECK(clEnqueueNDRangeKernel(env.queue, k_matvec, 1, NULL, &global, NULL, 0, NULL, NULL),
          "enqueue matvec");
    CHECK(clFinish(env.queue), "clFinish");
    t1 = now_sec();
    printf("matvec:   %8.3f ms\n", 1e3 * (t1 - t0));

    /* ---- 2. matmul ------------------------------------------------------ */
    t0 = now_sec();
    CHECK(clSetKernelArg(k_matmul, 0, sizeof(cl_mem), &d_A), "arg matmul 0");
    CHECK(clSetKernelArg(k_matmul, 1, sizeof(cl_mem), &d_B), "arg matmul 1");
    CHECK(clSetKernelArg(k_matmul, 2, sizeof(cl_mem), &d_C), "arg matmul 2");
    CHECK(clSetKernelArg(k_matmul, 3, sizeof(int), &n), "arg matmul 3");
    size_t mm_local[2]  = {16, 16};
    size_t mm_global[2] = {round_up((size_t)n, 16), round_up((size_t)n, 16)};
    CHECK(clEnqueueNDRangeKernel(env.queue, k_matmul, 2, NULL, mm_global, mm_local, 0, NULL, NULL),
          "enqueue matmul");
    CHECK(clFinish(env.queue), "clFinish");
    t1 = now_sec();
    printf("matmul:   %8.3f ms\n", 1e3 * (t1 - t0));

    /* ---- 3. Jacobi iterations ----------------------------------------- */
    t0 = now_sec();
    float h2 = h * h;
    size_t jac_global[2] = {(size_t)n, (size_t)n};
    CHECK(clSetKernelArg(k_jacobi, 1, sizeof(cl_mem), &d_f), "arg jacobi 1");
    CHECK(clSetKernelArg(k_jacobi, 3, sizeof(int), &n), "arg jacobi 3");
    CHECK(clSetKernelArg(k_jacobi, 4, sizeof(float), &h2), "arg jacobi 4");
    for (int it = 0; it < iters; ++it) {
        CHECK(clSetKernelArg(k_jacobi, 0, sizeof(cl_mem), &d_u), "arg jacobi 0");
        CHECK(clSetKernelArg(k_jacobi, 2, sizeof(cl_mem), &d_u_new), "arg jacobi 2");
        CHECK(clEnqueueNDRangeKernel(env.queue, k_jacobi, 2, NULL, jac_global, NULL,
                                     0, NULL, NULL),
              "enqueue jacobi2d");
        cl_mem tmp = d_u; d_u = d_u_new; d_u_new = tmp;
    }
    CHECK(clFinish(env.queue), "clFinish");
    t1 = now_sec();
    printf("jacobi2d: %8.3f ms (%d sweeps)\n", 1e3 * (t1 - t0), iters);

    /* ---- 4. residual ---------------------------------------------------- */
    float inv_h2 = 1.0f / h2;
    CHECK(clSetKernelArg(k_resid, 0, sizeof(cl_mem), &d_u), "arg resid 0");
    CHECK(clSetKernelArg(k_resid, 1, sizeof(cl_mem), &d_f), "arg resid 1");
    CHECK(clSetKernelArg(k_resid, 2, sizeof(cl_mem), &d_partial), "arg resid 2");
    CHECK(clSetKernelArg(k_resid, 3, sizeof(int), &n), "arg resid 3");
    CHECK(clSetKernelArg(k_resid, 4, sizeof(float), &inv_h2), "arg resid 4");
    CHECK(clEnqueueNDRangeKernel(env.queue, k_resid, 1, NULL, &resid_global, &resid_local,
                                 0, NULL, NULL),
          "enqueue residual_norm");

    /* ---- results ---------------------------------------------------------- */
    CHECK(clEnqueueReadBuffer(env.queue, d_y, CL_TRUE, 0, sizeof(float) * n, y, 0, NULL, NULL),
          "read y");
    CHECK(clEnqueueReadBuffer(env.queue, d_C, CL_TRUE, 0, sizeof(float) * n * n, C, 0, NULL, NULL),
          "read C");
    CHECK(clEnqueueReadBuffer(env.queue, d_u, CL_TRUE, 0, sizeof(float) * n * n, u, 0, NULL, NULL),
          "read u");
    CHECK(clEnqueueReadBuffer(env.queue, d_partial, CL_TRUE, 0, sizeof(float) * ngroups, partial,
                              0, NULL, NULL),
          "read partial");

    double res2 = checksum(partial, ngroups);
    printf("checksum matvec = %.6e\n", checksum(y, (size_t)n));
    printf("checksum matmul = %.6e\n", checksum(C, (size_t)n * n));
    printf("checksum jacobi2d = %.6e\n", checksum(u, (size_t)n * n));
    printf("checksum residual_norm = %.6e\n", sqrt(res2));

    /* ---- cleanup ---------------------------------------------------------- */
    clReleaseMemObject(d_A);
    clReleaseMemObject(d_B);
    clReleaseMemObject(d_C);
    clReleaseMemObject(d_x);
    clReleaseMemObject(d_y);
    clReleaseMemObject(d_u);
    clReleaseMemObject(d_u_new);
    clReleaseMemObject(d_f);
    clReleaseMemObject(d_partial);
    clReleaseKernel(k_matvec);
    clReleaseKernel(k_matmul);
    clReleaseKernel(k_jacobi);
    clReleaseKernel(k_resid);
    clReleaseProgram(prog_linalg);
    clReleaseProgram(prog_stencil);
    cl_env_release(&env);

    free(A); free(B); free(C); free(x); free(y); free(u); free(f); free(partial);
    return 0;
}
