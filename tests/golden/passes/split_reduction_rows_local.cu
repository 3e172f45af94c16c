// RUN: split-reduction
// ----- INPUT
__global__ void rowdot(const double* __restrict__ A, const double* __restrict__ v, double* out, int rows, int cols)
{
    const int r = threadIdx.x + blockIdx.x * blockDim.x;
    if (r >= rows) return;
    double s = 0.0;
    for (int c = 0; c < cols; ++c)
        s = s + A[(size_t)r * cols + c] * v[c];
    out[r] = s;
}
// ----- EXPECTED
__global__ void rowdot(const double* __restrict__ A, const double* __restrict__ v, double* out, int rows, int cols)
{
    const int r = (threadIdx.x + blockIdx.x * blockDim.x) / 32;
    const int lane = threadIdx.x % 32;
    double part = 0;
    if (!(r >= rows)) {
        for (int c = 0 + lane; c < cols; c += 32)
            part = part + A[(size_t)r * cols + c] * v[c];
    }
    for (int off = 16; off > 0; off /= 2)
        part += __shfl_down_sync(0xffffffffu, part, off);
    if (lane == 0 && (!(r >= rows))) {
        double s = 0.0;
        s = s + part;
        out[r] = s;
    }
}
