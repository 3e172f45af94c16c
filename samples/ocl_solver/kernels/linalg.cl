/*
 * linalg.cl - dense matrix kernels (reference versions).
 * Build options: -DREAL=<type>
 */
#include "common.h"

/* y = A * x, one work-item per row of the n x n row-major matrix A */
__kernel void matvec(__global const REAL* A,
                     __global const REAL* x,
                     __global REAL* y,
                     const int n)
{
    int i = get_global_id(0);
    if (i >= n) return;

    REAL sum = 0;
    for (int k = 0; k < n; ++k) {
        sum += A[IDX(i, k, n)] * x[k];
    }
    y[i] = sum;
}

/* C = A * B, one work-item per element of C, accumulated directly in C */
__kernel void matmul(__global const REAL* A,
                     __global const REAL* B,
                     __global REAL* C,
                     const int n)
{
    int j = get_global_id(0);   /* column */
    int i = get_global_id(1);   /* row    */
    if (i >= n || j >= n) return;

    C[IDX(i, j, n)] = 0;
    for (int k = 0; k < n; ++k) {
        C[IDX(i, j, n)] += A[IDX(i, k, n)] * B[IDX(k, j, n)];
    }
}
