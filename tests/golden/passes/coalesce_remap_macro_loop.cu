// RUN: coalesce-remap
// ----- INPUT
#define IDX(r, c) ((r) * n + (c))
// row from x: each warp walks a column of every plane, 32 rows apart
__global__ void plane_sum(const float* a, float* out, int n, int planes)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < n && col < n) {
        float s = 0.0f;
        for (int p = 0; p < planes; p++)
            s += a[p * n * n + IDX(row, col)];
        out[IDX(row, col)] = s;
    }
}
// ----- EXPECTED
#define IDX(r, c) ((r) * n + (c))
// row from x: each warp walks a column of every plane, 32 rows apart
__global__ void plane_sum(const float* a, float* out, int n, int planes)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float s = 0.0f;
        for (int p = 0; p < planes; p++)
            s += a[p * n * n + IDX(row, col)];
        out[IDX(row, col)] = s;
    }
}
