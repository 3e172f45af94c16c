// zoo scan: exclusive prefix sum of every row of a matrix, one thread per row running sequentially (underfilled)
#include "../zoo.h"

#define ROWS 8192
#define COLS 2048

__global__ void scan_rows(const float* in, float* out, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    float run = 0.0f;
    for (int c = 0; c < cols; c++) {
        out[r * cols + c] = run;
        run += in[r * cols + c];
    }
}

int main()
{
    size_t n = (size_t)ROWS * COLS;
    float* h = zoo_rand(n, 74);
    float *di, *dout;
    ZOO_CHECK(cudaMalloc(&di, (size_t)ROWS * COLS * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dout, (size_t)ROWS * COLS * sizeof(float)));
    zoo_upload(di, h, n);
    scan_rows<<<ROWS / 128, 128>>>(di, dout, ROWS, COLS);
    float* o = zoo_download(dout, n);
    int bad = 0, checked = 0;
    for (int r = 0; r < ROWS; r += 401) {
        double s = 0;
        for (int c = 0; c < COLS; c++) {
            if (c % 61 == 0) { bad += !zoo_close(s, o[(size_t)r * COLS + c], 1e-3); checked++; }
            s += h[(size_t)r * COLS + c];
        }
    }
    return zoo_report("scan_rows", bad, checked, o, n);
}
