/*
 * config.h - problem sizes for the heat3d mini-app.
 *
 * Every size is a compile-time macro so that the build system can pick the
 * problem with -D flags (see the Makefile).  The defaults below give a small
 * problem that runs in well under a second on a current GPU.
 */
#ifndef HEAT3D_CONFIG_H
#define HEAT3D_CONFIG_H

/* dense linear-algebra phase: MAT_N x MAT_N matrices */
#ifndef MAT_N
#define MAT_N 512
#endif

/* heat-diffusion grid: NX x NY x NZ cells, x fastest */
#ifndef NX
#define NX 64
#endif
#ifndef NY
#define NY 64
#endif
#ifndef NZ
#define NZ 64
#endif

/* number of explicit time steps */
#ifndef STEPS
#define STEPS 10
#endif

/* number of tracer particles advected through the temperature field */
#ifndef NPART
#define NPART 65536
#endif

/* threads per block for the 1-D kernels */
#ifndef BLOCK_1D
#define BLOCK_1D 256
#endif

#endif /* HEAT3D_CONFIG_H */
