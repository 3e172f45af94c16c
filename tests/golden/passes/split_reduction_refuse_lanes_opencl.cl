// RUN: split-reduction
// ----- INPUT
__kernel void rowdot(__global const float* A, __global const float* v, __global float* out, int rows, int cols)
{
    int r = get_global_id(0);
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c)
        s += A[r * cols + c] * v[c];
    out[r] = s;
}
// ----- EXPECTED
// REFUSED: warp shuffles have no portable OpenCL 1.2 equivalent (splits mode works there)
