// RUN: vector-elementwise
// ----- INPUT
__global__ void relu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (x[i] > 0.0f)
            y[i] = x[i];
    }
}
// ----- EXPECTED
__global__ void relu(const float* x, float* y, int n)
{
    /* s2s: vector-elementwise, 4 elements per thread in 16-byte words */
    int s2s_q = blockIdx.x * blockDim.x + threadIdx.x;
    if (s2s_q * 4 + 3 < (n) && ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15) == 0) {
        const float4 s2s_x4 = reinterpret_cast<const float4*>(x)[s2s_q];
        float s2s_x[4] = {s2s_x4.x, s2s_x4.y, s2s_x4.z, s2s_x4.w};
        const float4 s2s_y4 = reinterpret_cast<const float4*>(y)[s2s_q];
        float s2s_y[4] = {s2s_y4.x, s2s_y4.y, s2s_y4.z, s2s_y4.w};
        #pragma unroll
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            if (s2s_x[s2s_c] > 0.0f)
                s2s_y[s2s_c] = s2s_x[s2s_c];
        }
        reinterpret_cast<float4*>(y)[s2s_q] = make_float4(s2s_y[0], s2s_y[1], s2s_y[2], s2s_y[3]);
    } else {
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            int i = s2s_q * 4 + s2s_c;
            if (i < (n)) {
                if (x[i] > 0.0f)
                    y[i] = x[i];
            }
        }
    }
}
