// RUN: vector-elementwise-2d
// ----- INPUT
__kernel void ger(__global float* a, __global const float* x, __global const float* y, const float alpha, const int m,
                  const int n, const int lda)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (j < n && i < m)
        a[i * lda + j] = a[i * lda + j] + alpha * x[i] * y[j];
}
// ----- EXPECTED
__kernel void ger(__global float* a, __global const float* x, __global const float* y, const float alpha, const int m,
                  const int n, const int lda)
{
    /* s2s: vector-elementwise-2d, 4 consecutive j per thread in 16-byte words */
    int s2s_q = get_global_id(0);
    int i = get_global_id(1);
    if (i < m && s2s_q * 4 + 3 < (n)) {
        const float4 s2s_a4 = vload4(0, &a[i * lda + (s2s_q * 4)]);
        float s2s_a[4] = {s2s_a4.s0, s2s_a4.s1, s2s_a4.s2, s2s_a4.s3};
        const float s2s_x = x[i];
        const float4 s2s_y4 = vload4(0, &y[(s2s_q * 4)]);
        float s2s_y[4] = {s2s_y4.s0, s2s_y4.s1, s2s_y4.s2, s2s_y4.s3};
        #pragma unroll
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            s2s_a[s2s_c] = s2s_a[s2s_c] + alpha * s2s_x * s2s_y[s2s_c];
        }
        vstore4((float4)(s2s_a[0], s2s_a[1], s2s_a[2], s2s_a[3]), 0, &a[i * lda + (s2s_q * 4)]);
    } else {
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            int j = s2s_q * 4 + s2s_c;
            if (j < n && i < m)
                a[i * lda + j] = a[i * lda + j] + alpha * x[i] * y[j];
        }
    }
}
