/* s2s parsing stub for <cuda_fp16.h>: a half type that converts to and from float. */
#ifndef S2S_STUB_CUDA_FP16_H
#define S2S_STUB_CUDA_FP16_H
#include "../s2s_cuda_shim.h"
#if defined(__cplusplus)
struct __half {
    unsigned short __x;
    __half() = default;
    S2S_HD __half(float f);
    S2S_HD operator float() const;
};
struct __half2 { __half x, y; };
typedef struct __half half;
typedef struct __half2 half2;
S2S_HD __half __float2half(float);
S2S_HD __half __float2half_rn(float);
S2S_HD float __half2float(__half);
S2S_HD __half2 __floats2half2_rn(float, float);
S2S_HD __half2 __float2half2_rn(float);
S2S_HD float __low2float(__half2);
S2S_HD float __high2float(__half2);
S2S_D __half hsqrt(__half);
S2S_D __half __hadd(__half, __half);
S2S_D __half __hmul(__half, __half);
S2S_D __half __hfma(__half, __half, __half);
S2S_D __half2 __hadd2(__half2, __half2);
S2S_D __half2 __hmul2(__half2, __half2);
S2S_D __half2 __hfma2(__half2, __half2, __half2);
#endif
#endif
