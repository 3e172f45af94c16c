// RUN: delinearize-2d
// ----- INPUT
// t itself indexes the output beside its digits: it becomes the number they spell
__global__ void flat_out(const float* a, float* out, int rows, int cols)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int r = t / cols, c = t % cols;
    if (r >= rows) return;
    out[t] = a[c * rows + r] + (float)t;
}
// ----- EXPECTED
// t itself indexes the output beside its digits: it becomes the number they spell
__global__ void flat_out(const float* a, float* out, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= rows || c >= cols) return;
    out[(r * cols + c)] = a[c * rows + r] + (float)(r * cols + c);
}
