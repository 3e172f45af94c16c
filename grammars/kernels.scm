; CUDA and HIP kernels: a function definition carrying the __global__ specifier.
(function_definition "__global__") @kernel
