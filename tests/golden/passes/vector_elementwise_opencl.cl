// RUN: vector-elementwise
// ----- INPUT
__kernel void scale(const int n, __global const float* x, __global float* out)
{
    int i = get_global_id(0);
    if (i < n) {
        out[i] = 2.0f * x[i];
    }
}
// ----- EXPECTED
__kernel void scale(const int n, __global const float* x, __global float* out)
{
    /* s2s: vector-elementwise, 4 elements per thread in 16-byte words */
    int s2s_q = get_global_id(0);
    if (s2s_q * 4 + 3 < (n)) {
        const float4 s2s_x4 = vload4(s2s_q, x);
        float s2s_x[4] = {s2s_x4.s0, s2s_x4.s1, s2s_x4.s2, s2s_x4.s3};
        float s2s_out[4];
        #pragma unroll
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            s2s_out[s2s_c] = 2.0f * s2s_x[s2s_c];
        }
        vstore4((float4)(s2s_out[0], s2s_out[1], s2s_out[2], s2s_out[3]), s2s_q, out);
    } else {
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            int i = s2s_q * 4 + s2s_c;
            if (i < (n)) {
                out[i] = 2.0f * x[i];
            }
        }
    }
}
