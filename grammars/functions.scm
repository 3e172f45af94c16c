; Every function definition: OpenCL kernels are picked from these by the blanked __kernel keyword,
; and kernels hidden behind object-like macros by their leading type name.
(function_definition) @function
