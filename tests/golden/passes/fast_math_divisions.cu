// RUN: fast-math
// KERNEL: potential
// ----- INPUT
/* a potential and its weighted sums: every way a division by a square root is written */
__global__ void potential(const float* x, const float* m, float* out, float* w, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float p = 0.0f, q = 0.0f;
    for (int j = 0; j < n; j++) {
        float d = x[j] - x[i];
        float r2 = d * d + 1e-4f;
        p -= m[j] / sqrtf(r2);
        q += (m[j] + 1.0f) / sqrtf(r2) * d - 2.0f * m[j] / (sqrtf(r2));
        q -= 1.0f / sqrtf(r2) + 1.0f / (sqrt(r2));
    }
    float s = sqrtf(p * p + 1.0f);
    float t = sqrtf(q * q + 1.0f);
    double e = 2.0;
    out[i] = (p + q) / s + m[i] / s / (s) + t * m[i] / t + (float)(1.0 / sqrt(e));
    w[i] /= sqrtf(q * q + 1.0f);
}
// ----- EXPECTED
/* a potential and its weighted sums: every way a division by a square root is written */
__global__ void potential(const float* x, const float* m, float* out, float* w, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float p = 0.0f, q = 0.0f;
    for (int j = 0; j < n; j++) {
        float d = x[j] - x[i];
        float r2 = d * d + 1e-4f;
        p -= m[j] * rsqrtf(r2);
        q += (m[j] + 1.0f) * rsqrtf(r2) * d - 2.0f * m[j] * (rsqrtf(r2));
        q -= rsqrtf(r2) + (rsqrtf(r2));
    }
    float s = rsqrtf(p * p + 1.0f);
    float t = sqrtf(q * q + 1.0f);
    double e = 2.0;
    out[i] = (p + q) * s + m[i] * s * (s) + t * m[i] / t + (float)(1.0 / sqrt(e));
    w[i] *= rsqrtf(q * q + 1.0f);
}
