// RUN: vector-loads{width=4}
// ----- INPUT
__kernel void colwalk(__global const float* A, __global float* s, const int n)
{
    int j = get_global_id(0);
    if (j >= n) return;
    float acc = 0;
    for (int i = 0; i < n; ++i)
        acc += A[i * n + j];
    s[j] = acc;
}
// ----- EXPECTED
// REFUSED: does not step by one element
