// RUN: vector-elementwise
// ----- INPUT
__global__ void copyd(const double* x, double* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i];
}
// ----- EXPECTED
#ifndef S2S_QUAD
#define S2S_QUAD
template <typename S2S_T, unsigned long long S2S_B = 4 * sizeof(S2S_T)>
struct alignas((S2S_B & (S2S_B - 1)) == 0 && S2S_B <= 32 ? S2S_B : alignof(S2S_T)) s2s_quad { S2S_T v[4]; };
#endif

__global__ void copyd(const double* x, double* y, int n)
{
    /* s2s: vector-elementwise, 4 elements per thread in 16-byte words */
    int s2s_q = blockIdx.x * blockDim.x + threadIdx.x;
    if (s2s_q * 4 + 3 < (n) && (reinterpret_cast<unsigned long long>(x) & (alignof(s2s_quad<double>) - 1)) == 0 && (reinterpret_cast<unsigned long long>(y) & (alignof(s2s_quad<double>) - 1)) == 0) {
        const s2s_quad<double> s2s_x4 = reinterpret_cast<const s2s_quad<double>*>(x)[s2s_q];
        double s2s_x[4] = {s2s_x4.v[0], s2s_x4.v[1], s2s_x4.v[2], s2s_x4.v[3]};
        double s2s_y[4];
        #pragma unroll
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            s2s_y[s2s_c] = s2s_x[s2s_c];
        }
        reinterpret_cast<s2s_quad<double>*>(y)[s2s_q] = s2s_quad<double>{{s2s_y[0], s2s_y[1], s2s_y[2], s2s_y[3]}};
    } else {
        for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
            int i = s2s_q * 4 + s2s_c;
            if (i < (n)) {
                y[i] = x[i];
            }
        }
    }
}
