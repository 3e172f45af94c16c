// RUN: smem-allpairs
// ----- INPUT
__global__ void prefix_pairs(const float* x, const int* len, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int m = len[i];
        float p = 0.0f;
        for (int j = 0; j < m; j++)
            p += x[j];
        phi[i] = p;
    }
}
// ----- EXPECTED
// REFUSED: the loop bound must
