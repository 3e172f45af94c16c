// zoo stencil: 2-D Jacobi 9-point (box) sweep through an indexing macro, 1-D grid over all points
#include "../zoo.h"

#define N 4096
#define IDX(i, j) ((i) * N + (j))

__global__ void jacobi2d_macro(const float* __restrict__ a, float* __restrict__ b)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    int i = p / N;
    int j = p % N;
    if (i < 1 || i >= N - 1 || j < 1 || j >= N - 1)
        return;
    float s = 0.0f;
    for (int di = -1; di <= 1; di++)
        for (int dj = -1; dj <= 1; dj++)
            s += a[IDX(i + di, j + dj)];
    b[IDX(i, j)] = s * (1.0f / 9.0f);
}

int main()
{
    size_t n = (size_t)N * N;
    float* h = zoo_rand(n, 51);
    float *da, *db;
    ZOO_CHECK(cudaMalloc(&da, (size_t)N * N * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&db, (size_t)N * N * sizeof(float)));
    zoo_upload(da, h, n);
    zoo_upload(db, h, n);
    jacobi2d_macro<<<(N * N + 255) / 256, 256>>>(da, db);
    float* o = zoo_download(db, n);
    int bad = 0, checked = 0;
    for (size_t e = N + 1; e < n - N - 1; e += 7919) {
        size_t i = e / N, j = e % N;
        if (j == 0 || j == N - 1) continue;
        double s = 0;
        for (int di = -1; di <= 1; di++)
            for (int dj = -1; dj <= 1; dj++) s += h[(i + di) * N + j + dj];
        bad += !zoo_close(s / 9.0, o[e]);
        checked++;
    }
    return zoo_report("jacobi2d_macro", bad, checked, o, n);
}
