/* s2s parsing stub for <vector_types.h>: everything it needs is in s2s_cuda_shim.h. */
#ifndef S2S_STUB_VECTOR_TYPES_H
#define S2S_STUB_VECTOR_TYPES_H
#include "../s2s_cuda_shim.h"
#endif
