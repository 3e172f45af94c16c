/*
 * constants.cuh - stencil coefficients kept in constant memory.
 *
 * The __constant__ array itself is defined in src/kernels_stencil.cu (the
 * file whose kernel reads it); host code fills it through
 * upload_stencil_coeffs(), which calls cudaMemcpyToSymbol in that same
 * translation unit, so no relocatable device code is needed.
 *
 * Layout: coeffs[0] = centre, coeffs[1..6] = -x, +x, -y, +y, -z, +z.
 */
#ifndef HEAT3D_CONSTANTS_CUH
#define HEAT3D_CONSTANTS_CUH

#define STENCIL_NCOEFF 7

/* copy STENCIL_NCOEFF floats from host memory into constant memory */
void upload_stencil_coeffs(const float* h_coeffs);

#endif /* HEAT3D_CONSTANTS_CUH */
