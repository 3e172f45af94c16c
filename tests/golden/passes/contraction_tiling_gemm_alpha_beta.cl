// RUN: contraction-tiling{tile=16 rows=2}
// ----- INPUT
__kernel void gemm(__global float* a, __global float* b, __global float* c, float alpha, float beta, int ni, int nj, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if ((i < ni) && (j < nj)) {
        c[i * nj + j] *= beta;
        for (int k = 0; k < nk; k++) {
            c[i * nj + j] += alpha * a[i * nk + k] * b[k * nj + j];
        }
    }
}
// ----- EXPECTED
__kernel void gemm(__global float* a, __global float* b, __global float* c, float alpha, float beta, int ni, int nj, int nk)
{
    __local float As[16][17];
    __local float Bs[16][17];
    float acc[2];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int row0 = get_group_id(1) * 16, col0 = get_group_id(0) * 16;
    for (int r = 0; r < 2; ++r) {
        int i = row0 + ty + r * 8;
        int j = col0 + tx;
        acc[r] = 0;
        if ((i < ni) && (j < nj)) {
            c[i * nj + j] *= beta;
            acc[r] = c[i * nj + j];
        }
    }
    for (int t = 0; t < nk; t += 16) {
        for (int e = ty; e < 16; e += 8) {
            { int i = row0 + e; int k = t + tx; As[e][tx] = (i < ni && k < nk) ? a[i * nk + k] : (float)0; }
            { int j = col0 + tx; int k = t + e; Bs[e][tx] = (k < nk && j < nj) ? b[k * nj + j] : (float)0; }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t + 16 <= nk) {
            #pragma unroll
            for (int kk = 0; kk < 16; ++kk)
                for (int r = 0; r < 2; ++r)
                    acc[r] += alpha * As[ty + r * 8][kk] * Bs[kk][tx];
        } else {
            for (int kk = 0; kk < nk - t; ++kk)
                for (int r = 0; r < 2; ++r)
                    acc[r] += alpha * As[ty + r * 8][kk] * Bs[kk][tx];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int r = 0; r < 2; ++r) {
        int i = row0 + ty + r * 8;
        int j = col0 + tx;
        if ((i < ni) && (j < nj)) {
            c[i * nj + j] = acc[r];
        }
    }
}
