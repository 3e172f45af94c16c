/* s2s parsing stub for <cuda_runtime_api.h>: everything it needs is in s2s_cuda_shim.h. */
#ifndef S2S_STUB_CUDA_RUNTIME_API_H
#define S2S_STUB_CUDA_RUNTIME_API_H
#include "../s2s_cuda_shim.h"
#endif
