/* s2s parsing stub for <device_launch_parameters.h>: everything it needs is in s2s_cuda_shim.h. */
#ifndef S2S_STUB_DEVICE_LAUNCH_PARAMETERS_H
#define S2S_STUB_DEVICE_LAUNCH_PARAMETERS_H
#include "../s2s_cuda_shim.h"
#endif
