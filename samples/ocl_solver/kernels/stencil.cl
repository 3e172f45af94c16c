/*
 * stencil.cl - Jacobi iteration for the 2-D Poisson problem -lap(u) = f
 * on an n x n grid with fixed boundary values.
 * Build options: -DREAL=<type> -DWG_SIZE=<work-group size of residual_norm>
 */
#include "common.h"

#ifndef WG_SIZE
#error "compile with -DWG_SIZE=<work-group size>"
#endif

/* one Jacobi sweep with the 5-point stencil; h2 is the grid spacing squared */
__kernel void jacobi2d(__global const REAL* u,
                       __global const REAL* f,
                       __global REAL* u_new,
                       const int n,
                       const REAL h2)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i >= n || j >= n) return;

    if (i == 0 || j == 0 || i == n - 1 || j == n - 1) {
        u_new[IDX(i, j, n)] = u[IDX(i, j, n)];
        return;
    }

    u_new[IDX(i, j, n)] = (REAL)0.25 * (u[IDX(i - 1, j, n)] + u[IDX(i + 1, j, n)] +
                                        u[IDX(i, j - 1, n)] + u[IDX(i, j + 1, n)] +
                                        h2 * f[IDX(i, j, n)]);
}

/* Squared residual r = f + lap(u) summed per work-group of WG_SIZE items;
 * partial[group] receives the group's sum (the host adds the partials). */
__kernel void residual_norm(__global const REAL* u,
                            __global const REAL* f,
                            __global REAL* partial,
                            const int n,
                            const REAL inv_h2)
{
    __local REAL scratch[WG_SIZE];

    int gid = get_global_id(0);
    int lid = get_local_id(0);
    int i = gid / n;
    int j = gid % n;

    REAL r = 0;
    if (i > 0 && j > 0 && i < n - 1 && j < n - 1) {
        REAL lap = (u[IDX(i - 1, j, n)] + u[IDX(i + 1, j, n)] +
                    u[IDX(i, j - 1, n)] + u[IDX(i, j + 1, n)] -
                    4 * u[IDX(i, j, n)]) * inv_h2;
        r = f[IDX(i, j, n)] + lap;
    }
    scratch[lid] = r * r;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int s = WG_SIZE / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) partial[get_group_id(0)] = scratch[0];
}
