// zoo reduction: sum of every row of a 4096 x 4096 matrix, one thread per row (row-major: strided across a warp)
#include "../zoo.h"

#define ROWS 4096
#define COLS 4096

__global__ void row_sums(const float* m, float* sums)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < ROWS) {
        sums[r] = 0.0f;
        for (int c = 0; c < COLS; c++)
            sums[r] += m[r * COLS + c];
    }
}

int main()
{
    float* h = zoo_rand((size_t)ROWS * COLS, 72);
    float *d, *ds;
    ZOO_CHECK(cudaMalloc(&d, (size_t)ROWS * COLS * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&ds, ROWS * sizeof(float)));
    zoo_upload(d, h, (size_t)ROWS * COLS);
    row_sums<<<ROWS / 256, 256>>>(d, ds);
    float* o = zoo_download(ds, ROWS);
    int bad = 0, checked = 0;
    for (int r = 0; r < ROWS; r += 37, checked++) {
        double s = 0;
        for (int c = 0; c < COLS; c++) s += h[(size_t)r * COLS + c];
        bad += !zoo_close(s, o[r], 1e-2);
    }
    return zoo_report("row_sums", bad, checked, o, ROWS);
}
