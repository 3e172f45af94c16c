// RUN: split-reduction
// ----- INPUT
#define IDX(r, c, ld) ((r) * (ld) + (c))
__global__ void resid(const float* M, const float* v, float* out, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float s = out[r];
        for (int c = 1; c < cols; c++)
            s -= M[IDX(r, c, cols)] * v[c];
        out[r] = s;
    }
}
// ----- EXPECTED
#define IDX(r, c, ld) ((r) * (ld) + (c))
__global__ void resid(const float* M, const float* v, float* out, int rows, int cols)
{
    int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    float part = 0;
    if (r < rows) {
        if (((reinterpret_cast<unsigned long long>(&M[IDX(r, (1), cols)]) | reinterpret_cast<unsigned long long>(&v[(1)])) & 15) == 0) {
            const int c_end = (1) + ((cols) - (1)) / 4 * 4;
            for (int c = (1) + 4 * lane; c < c_end; c += 128) {
                const float4 w0 = *reinterpret_cast<const float4*>(&M[IDX(r, c, cols)]);
                const float4 w1 = *reinterpret_cast<const float4*>(&v[c]);
                part -= w0.x * w1.x;
                part -= w0.y * w1.y;
                part -= w0.z * w1.z;
                part -= w0.w * w1.w;
            }
            for (int c = c_end + lane; c < (cols); c += 32)
                part -= M[IDX(r, c, cols)] * v[c];
        } else {
            for (int c = (1) + lane; c < cols; c += 32)
                part -= M[IDX(r, c, cols)] * v[c];
        }
    }
    for (int off = 16; off > 0; off /= 2)
        part += __shfl_down_sync(0xffffffffu, part, off);
    if (lane == 0 && (r < rows)) {
        float s = out[r];
        s += part;
        out[r] = s;
    }
}
