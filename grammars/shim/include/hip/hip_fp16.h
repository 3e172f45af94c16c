/* s2s parsing stub for <hip/hip_fp16.h>. */
#include "hip_runtime.h"
