/*
 * cuda_check.h - error checking helpers used by all translation units.
 */
#ifndef HEAT3D_CUDA_CHECK_H
#define HEAT3D_CUDA_CHECK_H

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                      \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n",              \
                         cudaGetErrorName(err_), __FILE__, __LINE__,          \
                         cudaGetErrorString(err_));                           \
            std::exit(EXIT_FAILURE);                                          \
        }                                                                     \
    } while (0)

/* check for launch errors right after a kernel launch */
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#endif /* HEAT3D_CUDA_CHECK_H */
