// RUN: inner-loop-threads
// ----- INPUT
__global__ void ragged(const float* a, const int* len, float* out, int n)
{
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v < n) {
        for (int w = 0; w < len[0]; w++)
            out[v * 64 + w] = a[v] * 2.0f;
    }
}
// ----- EXPECTED
// REFUSED: must end where the guard bounds v
