/* s2s parsing stub for <texture_fetch_functions.h>: everything it needs is in s2s_cuda_shim.h. */
#ifndef S2S_STUB_TEXTURE_FETCH_FUNCTIONS_H
#define S2S_STUB_TEXTURE_FETCH_FUNCTIONS_H
#include "../s2s_cuda_shim.h"
#endif
