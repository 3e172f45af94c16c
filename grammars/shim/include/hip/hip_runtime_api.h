/* s2s parsing stub for <hip/hip_runtime_api.h>. */
#include "hip_runtime.h"
