// sequence zoo, OpenCL twin of heat1d_steps: the 3-point heat stencil between ping-pong buffers, and the one-point
// source whose amplitude follows the time index.
__kernel void heat_step(__global const float* u, __global float* v, int n, float r)
{
    int i = get_global_id(0);
    if (i >= n)
        return;
    float left = i > 0 ? u[i - 1] : u[i];
    float right = i < n - 1 ? u[i + 1] : u[i];
    v[i] = u[i] + r * (left - 2.0f * u[i] + right);
}

__kernel void heat_source(__global float* v, int at, int t, float amp)
{
    if (get_global_id(0) == 0)
        v[at] += amp * sin(0.001f * (float)t);
}
