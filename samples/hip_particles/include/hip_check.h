/*
 * hip_check.h - error checking for HIP runtime calls.
 */
#ifndef HIPP_HIP_CHECK_H
#define HIPP_HIP_CHECK_H

#include <cstdio>
#include <cstdlib>
#include <hip/hip_runtime.h>

#define HIP_CHECK(call)                                                       \
    do {                                                                      \
        hipError_t err_ = (call);                                             \
        if (err_ != hipSuccess) {                                             \
            std::fprintf(stderr, "HIP error '%s' at %s:%d: %s\n",             \
                         hipGetErrorName(err_), __FILE__, __LINE__,           \
                         hipGetErrorString(err_));                            \
            std::exit(EXIT_FAILURE);                                          \
        }                                                                     \
    } while (0)

#endif /* HIPP_HIP_CHECK_H */
