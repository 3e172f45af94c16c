// RUN: thread-coarsen{axis=y factor=4},vector-elementwise-2d
// ----- INPUT
__global__ void ger(float* A, const float* x, const float* y, float alpha, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n)
        A[i * n + j] += alpha * x[i] * y[j];
}
// ----- EXPECTED
__global__ void ger(float* A, const float* x, const float* y, float alpha, int n)
{
    /* s2s: vector-elementwise-2d, 4 consecutive j per thread in 16-byte words */
    int s2s_q = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll
    for (int cy = 0; cy < 4; ++cy) {
        int i = (blockIdx.y * blockDim.y + threadIdx.y) * 4 + cy;
        if (i < n && s2s_q * 4 + 3 < (n) && ((reinterpret_cast<unsigned long long>(&A[i * n + (s2s_q * 4)]) | reinterpret_cast<unsigned long long>(&y[(s2s_q * 4)])) & 15) == 0) {
            const float4 s2s_A4 = *reinterpret_cast<const float4*>(&A[i * n + (s2s_q * 4)]);
            float s2s_A[4] = {s2s_A4.x, s2s_A4.y, s2s_A4.z, s2s_A4.w};
            const float s2s_x = x[i];
            const float4 s2s_y4 = *reinterpret_cast<const float4*>(&y[(s2s_q * 4)]);
            float s2s_y[4] = {s2s_y4.x, s2s_y4.y, s2s_y4.z, s2s_y4.w};
            #pragma unroll
            for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
                s2s_A[s2s_c] += alpha * s2s_x * s2s_y[s2s_c];
            }
            *reinterpret_cast<float4*>(&A[i * n + (s2s_q * 4)]) = make_float4(s2s_A[0], s2s_A[1], s2s_A[2], s2s_A[3]);
        } else {
            for (int s2s_c = 0; s2s_c < 4; ++s2s_c) {
                int j = s2s_q * 4 + s2s_c;
                if (i < n && j < n)
                    A[i * n + j] += alpha * x[i] * y[j];
            }
        }
    }
}
