/*
 * common.h - definitions shared by the OpenCL kernels.
 * Included from the .cl files; the host adds -I<kernel dir> to the build
 * options.
 */
#ifndef OCL_SOLVER_COMMON_H
#define OCL_SOLVER_COMMON_H

/* element type, normally given as -DREAL=float */
#ifndef REAL
#define REAL float
#endif

/* row-major index of element (i, j) of an n-column array */
#define IDX(i, j, n) ((i) * (n) + (j))

#endif /* OCL_SOLVER_COMMON_H */
