// RUN: split-reduction
// ----- INPUT
__kernel void gemv_cols(__global const float* A, __global const float* x, __global float* y, float alpha, float beta, int m, int n)
{
    int j = get_global_id(0);
    if (j < n) {
        y[j] = beta * y[j];
        for (int i = 0; i < m; i++)
            y[j] += alpha * A[i * n + j] * x[i];
    }
}
// ----- EXPECTED
__kernel void gemv_cols(__global const float* A, __global const float* x, __global float* y, float alpha, float beta, int m, int n)
{
    int j = get_global_id(0);
    __local float red[8][32];
    const int s = get_local_id(1);
    float part = 0;
    if (j < n) {
        for (int i = 0 + s; i < m; i += 8)
            part += alpha * A[i * n + j] * x[i];
    }
    red[s][get_local_id(0)] = part;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (s == 0) {
        for (int off = 1; off < 8; ++off)
            part += red[off][get_local_id(0)];
    }
    if (s == 0 && (j < n)) {
        y[j] = beta * y[j];
        y[j] += part;
    }
}
