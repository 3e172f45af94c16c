// RUN: hoist-invariants
// ----- INPUT
// s[i] is the same for every j, w[j] for every k: each is read once before its loop (the k loop always runs)
__kernel void blend(__global const float* a, __global const float* s, __global const float* w, __global float* out,
                    const int n, const int m)
{
    int i = get_global_id(0);
    if (i >= n)
        return;
    for (int j = 0; j < m; j++) {
        float acc = 0.0f;
        for (int k = 0; k < 4; k++)
            acc += a[(i * m + j) * 4 + k] * w[j];
        out[i * m + j] = acc * s[i] + s[i];
    }
}
// ----- EXPECTED
// s[i] is the same for every j, w[j] for every k: each is read once before its loop (the k loop always runs)
__kernel void blend(__global const float* a, __global const float* s, __global const float* w, __global float* out,
                    const int n, const int m)
{
    int i = get_global_id(0);
    if (i >= n)
        return;
    const float s_h = 0 < m ? s[i] : (float)0;
    for (int j = 0; j < m; j++) {
        float acc = 0.0f;
        const float w_h = w[j];
        for (int k = 0; k < 4; k++)
            acc += a[(i * m + j) * 4 + k] * w_h;
        out[i * m + j] = acc * s_h + s_h;
    }
}
