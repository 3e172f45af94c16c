// RUN: vector-elementwise
// ----- INPUT
#define INCX 1
#define X(i) x[(i) * INCX]
#define Y(i) y[(i) * INCX]

__global__ void axpby(const float* x, float* y, float alpha, float beta, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        Y(i) = alpha * X(i) + beta * Y(i);
}
// ----- EXPECTED
#define INCX 1
#define X(i) x[(i) * INCX]
#define Y(i) y[(i) * INCX]

__global__ void axpby(const float* x, float* y, float alpha, float beta, int n)
{
    /* s2s: vector-elementwise, 4 elements per thread in 16-byte words */
    int s2s_q = blockIdx.x * blockDim.x + threadIdx.x;
    if (((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15) == 0) {
        for (; s2s_q < (n) / 4; s2s_q += blockDim.x * gridDim.x) {
            const float4 s2s_x4 = reinterpret_cast<const float4*>(x)[s2s_q];
            float s2s_x[4] = {s2s_x4.x, s2s_x4.y, s2s_x4.z, s2s_x4.w};
            const float4 s2s_y4 = reinterpret_cast<const float4*>(y)[s2s_q];
            float s2s_y[4] = {s2s_y4.x, s2s_y4.y, s2s_y4.z, s2s_y4.w};
            #pragma unroll
            for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
                s2s_y[s2s_c] = alpha * s2s_x[s2s_c] + beta * s2s_y[s2s_c];
            }
            reinterpret_cast<float4*>(y)[s2s_q] = make_float4(s2s_y[0], s2s_y[1], s2s_y[2], s2s_y[3]);
        }
        for (int i = (n) / 4 * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x) {
            Y(i) = alpha * X(i) + beta * Y(i);
        }
    } else {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
            Y(i) = alpha * X(i) + beta * Y(i);
    }
}
