// RUN: split-reduction{mode=splits splits=4}
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
__kernel void rowdot(__global const float* A, __global const float* v, __global float* out, int rows, int cols)
{
    int r = get_global_id(0);
    __local float red[4][32];
    const int s1 = get_local_id(1);
    float part = 0;
    if (!(r >= rows)) {
        for (int c = 0 + s1; c < cols; c += 4)
            part += A[r * cols + c] * v[c];
    }
    red[s1][get_local_id(0)] = part;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (s1 == 0) {
        for (int off = 1; off < 4; ++off)
            part += red[off][get_local_id(0)];
    }
    if (s1 == 0 && (!(r >= rows))) {
        float s = 0.0f;
        s += part;
        out[r] = s;
    }
}
