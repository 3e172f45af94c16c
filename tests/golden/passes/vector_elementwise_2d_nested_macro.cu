// RUN: vector-elementwise-2d
// ----- INPUT
#define LD 1024
#define OUT(r, c) out[(r) * LD + (c)]
__global__ void scale_rows(const float* in, const float* s, const float* bias, float* out, int rows, int cols)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < rows) {
        if (j < cols) {
            float v = in[i * LD + j] * s[i];
            OUT(i, j) = v + bias[j] * (float)j;
        }
    }
}
// ----- EXPECTED
#define LD 1024
#define OUT(r, c) out[(r) * LD + (c)]
__global__ void scale_rows(const float* in, const float* s, const float* bias, float* out, int rows, int cols)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    /* s2s: vector-elementwise-2d, 4 consecutive j per thread in 16-byte words */
    int s2s_q = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < rows) {
        if (s2s_q * 4 + 3 < (cols) && ((reinterpret_cast<unsigned long long>(&in[i * LD + (s2s_q * 4)]) | reinterpret_cast<unsigned long long>(&OUT(i, (s2s_q * 4))) | reinterpret_cast<unsigned long long>(&bias[(s2s_q * 4)])) & 15) == 0) {
            const float4 s2s_in4 = *reinterpret_cast<const float4*>(&in[i * LD + (s2s_q * 4)]);
            float s2s_in[4] = {s2s_in4.x, s2s_in4.y, s2s_in4.z, s2s_in4.w};
            const float s2s_s = s[i];
            float s2s_out[4];
            const float4 s2s_bias4 = *reinterpret_cast<const float4*>(&bias[(s2s_q * 4)]);
            float s2s_bias[4] = {s2s_bias4.x, s2s_bias4.y, s2s_bias4.z, s2s_bias4.w};
            #pragma unroll
            for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
                int j = s2s_q * 4 + s2s_c;
                float v = s2s_in[s2s_c] * s2s_s;
                s2s_out[s2s_c] = v + s2s_bias[s2s_c] * (float)j;
            }
            *reinterpret_cast<float4*>(&OUT(i, (s2s_q * 4))) = make_float4(s2s_out[0], s2s_out[1], s2s_out[2], s2s_out[3]);
        } else {
            for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
                int j = s2s_q * 4 + s2s_c;
                if (j < cols) {
                    float v = in[i * LD + j] * s[i];
                    OUT(i, j) = v + bias[j] * (float)j;
                }
            }
        }
    }
}
