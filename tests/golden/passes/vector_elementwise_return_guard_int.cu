// RUN: vector-elementwise
// ----- INPUT
__global__ void offsets(const int* __restrict__ a, int* __restrict__ b, const float* w, float* out, int n)
{
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i >= n)
        return;
    int k = a[i] + i;
    b[i] = k;
    out[i] = w[i] * (float)k;
}
// ----- EXPECTED
__global__ void offsets(const int* __restrict__ a, int* __restrict__ b, const float* w, float* out, int n)
{
    /* s2s: vector-elementwise, 4 elements per thread in 16-byte words */
    int s2s_q = threadIdx.x + blockIdx.x * blockDim.x;
    if (s2s_q * 4 + 3 < (n) && ((reinterpret_cast<unsigned long long>(a) | reinterpret_cast<unsigned long long>(b) | reinterpret_cast<unsigned long long>(w) | reinterpret_cast<unsigned long long>(out)) & 15) == 0) {
        const int4 s2s_a4 = reinterpret_cast<const int4*>(a)[s2s_q];
        int s2s_a[4] = {s2s_a4.x, s2s_a4.y, s2s_a4.z, s2s_a4.w};
        int s2s_b[4];
        const float4 s2s_w4 = reinterpret_cast<const float4*>(w)[s2s_q];
        float s2s_w[4] = {s2s_w4.x, s2s_w4.y, s2s_w4.z, s2s_w4.w};
        float s2s_out[4];
        #pragma unroll
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            int i = s2s_q * 4 + s2s_c;
            int k = s2s_a[s2s_c] + i;
            s2s_b[s2s_c] = k;
            s2s_out[s2s_c] = s2s_w[s2s_c] * (float)k;
        }
        reinterpret_cast<int4*>(b)[s2s_q] = make_int4(s2s_b[0], s2s_b[1], s2s_b[2], s2s_b[3]);
        reinterpret_cast<float4*>(out)[s2s_q] = make_float4(s2s_out[0], s2s_out[1], s2s_out[2], s2s_out[3]);
    } else {
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            int i = s2s_q * 4 + s2s_c;
            if (i < (n)) {
                int k = a[i] + i;
                b[i] = k;
                out[i] = w[i] * (float)k;
            }
        }
    }
}
