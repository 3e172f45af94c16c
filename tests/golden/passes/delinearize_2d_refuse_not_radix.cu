// RUN: delinearize-2d
// ----- INPUT
// not a numbering: the row divides by m but the column wraps at n
__global__ void mixed(const float* a, float* out, int m, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int i = t / m;
    int j = t % n;
    if (i < m)
        out[i * n + j] = a[j * m + i];
}
// ----- EXPECTED
// REFUSED: i: not a digit of a mixed-radix split (divisor n expected)
