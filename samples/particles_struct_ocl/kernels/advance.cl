/* particles_struct_ocl: the OpenCL counterpart of particles_struct_cuda. OpenCL kernels cannot take pointers
 * inside structs, so the state's scalars travel as a struct by value and the arrays as buffers. */
typedef struct {
    int n;
    int cells;
    float dt;
    float scale;
    float damping;
} Params;

__kernel void advance(__global float* x, __global float* v, __global const float* mass, __global const float* gx,
                      Params p)
{
    int i = get_global_id(0);
    if (i >= p.n) return;
    int cell = (int)(fabs(x[i]) * p.scale) % p.cells;
    float a = gx[cell] / mass[i];
    v[i] = p.damping * v[i] + a * p.dt;
    x[i] += v[i] * p.dt;
}
