// RUN: inner-loop-threads
// ----- INPUT
__global__ void tri(const float* a, float* out, int n, int m)
{
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v < n) {
        for (int w = v; w < m; w++)
            out[v * m + w] = a[v] * a[w];
    }
}
// ----- EXPECTED
// REFUSED: a triangular loop over w must end where the guard bounds v
