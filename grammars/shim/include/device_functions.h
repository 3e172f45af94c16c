/* s2s parsing stub for <device_functions.h>: everything it needs is in s2s_cuda_shim.h. */
#ifndef S2S_STUB_DEVICE_FUNCTIONS_H
#define S2S_STUB_DEVICE_FUNCTIONS_H
#include "../s2s_cuda_shim.h"
#endif
