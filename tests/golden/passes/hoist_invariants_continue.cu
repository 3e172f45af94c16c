// RUN: hoist-invariants
// ----- INPUT
// the pair loop skips j == i with `continue`: x[i] and y[i] (two arrays, one index) are still read once before it
__global__ void pairs(const float* x, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float s = 0.0f;
    for (int j = 0; j < n; j++) {
        if (j == i)
            continue;
        s += (x[j] - x[i]) * (y[j] - y[i]);
    }
    out[i] = s;
}
// ----- EXPECTED
// the pair loop skips j == i with `continue`: x[i] and y[i] (two arrays, one index) are still read once before it
__global__ void pairs(const float* x, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float s = 0.0f;
    const float x_h = 0 < n ? x[i] : (float)0;
    const float y_h = 0 < n ? y[i] : (float)0;
    for (int j = 0; j < n; j++) {
        if (j == i)
            continue;
        s += (x[j] - x_h) * (y[j] - y_h);
    }
    out[i] = s;
}
