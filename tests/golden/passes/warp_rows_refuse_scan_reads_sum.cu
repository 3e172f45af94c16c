// RUN: warp-rows
// ----- INPUT
__global__ void growth(const float* rate, float* out, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    float run = 1.0f;
    for (int c = 0; c < cols; c++) {
        out[r * cols + c] = run;
        run += run * rate[r * cols + c];
    }
}
// ----- EXPECTED
// REFUSED: or a running sum
