/*
 * config.h - default problem sizes of the ocl_solver mini-app.
 * Override with -D flags (see the Makefile).
 */
#ifndef OCL_SOLVER_CONFIG_H
#define OCL_SOLVER_CONFIG_H

/* matrix order for matvec / matmul and grid points per side for jacobi */
#ifndef PROB_N
#define PROB_N 256
#endif

/* number of Jacobi sweeps */
#ifndef JACOBI_ITERS
#define JACOBI_ITERS 200
#endif

/* work-group size of the residual reduction (also passed to the OpenCL
 * compiler as -DWG_SIZE=...) */
#ifndef WG_SIZE
#define WG_SIZE 64
#endif

#endif /* OCL_SOLVER_CONFIG_H */
