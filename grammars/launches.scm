; Kernel launches: triple-chevron syntax and the launch APIs that name the kernel as an argument.
(call_expression (kernel_call_syntax)) @chevron
(call_expression
  function: (identifier) @api
  (#any-of? @api "hipLaunchKernelGGL" "hipExtLaunchKernelGGL" "clEnqueueNDRangeKernel"
                 "cudaLaunchKernel" "cudaLaunchCooperativeKernel" "hipLaunchKernel" "hipLaunchCooperativeKernel")) @api_call
