; OpenCL kernel objects: `k = clCreateKernel(prog, "name", &err)` and `cl_kernel k = clCreateKernel(...)`.
(assignment_expression
  left: (_) @var
  right: (call_expression function: (identifier) @fn (#eq? @fn "clCreateKernel") arguments: (argument_list) @args))
(init_declarator
  declarator: (_) @var
  value: (call_expression function: (identifier) @fn (#eq? @fn "clCreateKernel") arguments: (argument_list) @args))
