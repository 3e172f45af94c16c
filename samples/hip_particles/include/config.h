/*
 * config.h - problem sizes for the hip_particles mini-app.
 * Override with -D flags (see the Makefile), e.g. make NBODY=32768.
 */
#ifndef HIPP_CONFIG_H
#define HIPP_CONFIG_H

/* number of bodies */
#ifndef NBODY
#define NBODY 16384
#endif

/* number of time steps */
#ifndef NSTEPS
#define NSTEPS 10
#endif

/* density grid: NGRID^3 cells */
#ifndef NGRID
#define NGRID 32
#endif

/* bins of the speed histogram */
#ifndef NBINS
#define NBINS 64
#endif

/* threads per block */
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif

#endif /* HIPP_CONFIG_H */
