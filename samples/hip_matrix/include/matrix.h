/*
 * matrix.h - the device steps of hip_matrix, launched from kernels.hip.
 */
#ifndef HIPM_MATRIX_H
#define HIPM_MATRIX_H

#include <cstdio>
#include <cstdlib>
#include <hip/hip_runtime.h>

#define HIP_CHECK(call)                                                       \
    do {                                                                      \
        hipError_t err_ = (call);                                             \
        if (err_ != hipSuccess) {                                             \
            std::fprintf(stderr, "HIP error '%s' at %s:%d\n",                 \
                         hipGetErrorString(err_), __FILE__, __LINE__);        \
            std::exit(EXIT_FAILURE);                                          \
        }                                                                     \
    } while (0)

/* C = A * B for n x n row-major matrices */
void multiply(const float* dA, const float* dB, float* dC, int n, hipStream_t stream);
/* every row of A scaled by its entry of s */
void scale_rows_f(float* dA, const float* ds, int n, hipStream_t stream);
/* x = (x + y) / 2: a running average of the results */
void relax(float* dx, const float* dy, int count, hipStream_t stream);

#endif /* HIPM_MATRIX_H */
