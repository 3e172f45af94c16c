// RUN: inner-loop-threads
// ----- INPUT
#define D 16
__global__ void batched_gemv(const float* mats, const float* xs, float* ys, int nbatch)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nbatch)
        return;
    for (int r = 0; r < D; r++) {
        float s = 0.0f;
        for (int c = 0; c < D; c++)
            s += mats[(b * D + r) * D + c] * xs[b * D + c];
        ys[b * D + r] = s;
    }
}
// ----- EXPECTED
#define D 16
__global__ void batched_gemv(const float* mats, const float* xs, float* ys, int nbatch)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (!(b >= nbatch) && r >= 0 && r < D) {
        float s = 0.0f;
        for (int c = 0; c < D; c++)
            s += mats[(b * D + r) * D + c] * xs[b * D + c];
        ys[b * D + r] = s;
    }
}
