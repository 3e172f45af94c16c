// RUN: inner-loop-threads
// ----- INPUT
__global__ void rowsum(const float* a, float* s, int m, int n)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x;
    if (j1 < m) {
        for (int j2 = 0; j2 < n; j2++)
            s[j1 * n + j2] = 2.0f * a[j1 * n + j2];
    }
}
// ----- EXPECTED
__global__ void rowsum(const float* a, float* s, int m, int n)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x;
    int j2 = blockIdx.y * blockDim.y + threadIdx.y;
    if (j1 < m && j2 >= 0 && j2 < n) {
        s[j1 * n + j2] = 2.0f * a[j1 * n + j2];
    }
}
