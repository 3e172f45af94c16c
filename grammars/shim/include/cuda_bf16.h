/* s2s parsing stub for <cuda_bf16.h>: a bfloat16 type that converts to and from float. */
#ifndef S2S_STUB_CUDA_BF16_H
#define S2S_STUB_CUDA_BF16_H
#include "../s2s_cuda_shim.h"
#if defined(__cplusplus)
struct __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    S2S_HD __nv_bfloat16(float f);
    S2S_HD operator float() const;
};
struct __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef struct __nv_bfloat16 nv_bfloat16;
typedef struct __nv_bfloat162 nv_bfloat162;
S2S_HD __nv_bfloat16 __float2bfloat16(float);
S2S_HD float __bfloat162float(__nv_bfloat16);
#endif
#endif
