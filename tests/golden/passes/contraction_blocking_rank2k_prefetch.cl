// RUN: contraction-blocking{prefetch=true}
// ----- INPUT
#define AM(r, s) a[(r) * nk + (s)]
#define BM(r, s) b[(r) * nk + (s)]
__kernel void syr2k(__global const float* a, __global const float* b, __global float* c, float alpha, float beta,
                    int n, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i >= n || j >= n) return;
    c[i * n + j] *= beta;
    for (int k = 0; k < nk; k++)
        c[i * n + j] += alpha * AM(j, k) * BM(i, k) + alpha * BM(j, k) * AM(i, k);
}
// ----- EXPECTED
#define AM(r, s) a[(r) * nk + (s)]
#define BM(r, s) b[(r) * nk + (s)]
__kernel void syr2k(__global const float* a, __global const float* b, __global float* c, float alpha, float beta,
                    int n, int nk)
{
    __local float4 As[2][8][33];
    __local float4 As2[2][8][33];
    __local float4 Bs[2][8][33];
    __local float4 Bs2[2][8][33];
    __local int alive;
    float acc[64];
    const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * 16 + tx;
    const int row0 = get_group_id(1) * 128, col0 = get_group_id(0) * 128;
    int live = 0;
    #pragma unroll
    for (int m = 0; m < 64; ++m) {
        int i = row0 + ty * 4 + m / 8 % 4 + m / 32 * 64;
        int j = col0 + tx * 4 + m % 4 + m % 8 / 4 * 64;
        acc[m] = 0;
        if (!(i >= n || j >= n)) {
            c[i * n + j] *= beta;
            acc[m] = c[i * n + j];
            live = 1;
        }
    }
    if (tid == 0) alive = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (live) alive = 1;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!alive) return;
    int va0 = 1;
    { int i = row0; int k = 0; va0 = va0 && ((size_t)&(BM(i, k)) % 16 == 0); }
    { int i = row0 + 1; int k = 0; va0 = va0 && ((size_t)&(BM(i, k)) % 16 == 0); }
    { int i = row0; int k = 0; const size_t p0 = (size_t)&(BM(i, k)); { int i = row0; int k = (0) + 1; va0 = va0 && ((size_t)&(BM(i, k)) == p0 + 4); } }
    int va1 = 1;
    { int i = row0; int k = 0; va1 = va1 && ((size_t)&(AM(i, k)) % 16 == 0); }
    { int i = row0 + 1; int k = 0; va1 = va1 && ((size_t)&(AM(i, k)) % 16 == 0); }
    { int i = row0; int k = 0; const size_t p0 = (size_t)&(AM(i, k)); { int i = row0; int k = (0) + 1; va1 = va1 && ((size_t)&(AM(i, k)) == p0 + 4); } }
    int vb0 = 1;
    { int j = col0; int k = 0; vb0 = vb0 && ((size_t)&(AM(j, k)) % 16 == 0); }
    { int j = col0 + 1; int k = 0; vb0 = vb0 && ((size_t)&(AM(j, k)) % 16 == 0); }
    { int j = col0; int k = 0; const size_t p0 = (size_t)&(AM(j, k)); { int j = col0; int k = (0) + 1; vb0 = vb0 && ((size_t)&(AM(j, k)) == p0 + 4); } }
    int vb1 = 1;
    { int j = col0; int k = 0; vb1 = vb1 && ((size_t)&(BM(j, k)) % 16 == 0); }
    { int j = col0 + 1; int k = 0; vb1 = vb1 && ((size_t)&(BM(j, k)) % 16 == 0); }
    { int j = col0; int k = 0; const size_t p0 = (size_t)&(BM(j, k)); { int j = col0; int k = (0) + 1; vb1 = vb1 && ((size_t)&(BM(j, k)) == p0 + 4); } }
    int buf = 0;
    #pragma unroll
    for (int e = 0; e < 1; ++e) {
        const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
        { int i = row0 + pa; int k = 0 + pb;
        if (va0 && i < n && k + 3 < nk) {
            const float4 v = vload4(0, &(BM(i, k)));
            ((__local float*)As[buf][pb + 0])[pa] = v.x;
            ((__local float*)As[buf][pb + 1])[pa] = v.y;
            ((__local float*)As[buf][pb + 2])[pa] = v.z;
            ((__local float*)As[buf][pb + 3])[pa] = v.w;
        } else {
            { int i = row0 + pa; int k = 0 + pb + 0; ((__local float*)As[buf][pb + 0])[pa] = (i < n && k < nk) ? BM(i, k) : 0.0f; }
            { int i = row0 + pa; int k = 0 + pb + 1; ((__local float*)As[buf][pb + 1])[pa] = (i < n && k < nk) ? BM(i, k) : 0.0f; }
            { int i = row0 + pa; int k = 0 + pb + 2; ((__local float*)As[buf][pb + 2])[pa] = (i < n && k < nk) ? BM(i, k) : 0.0f; }
            { int i = row0 + pa; int k = 0 + pb + 3; ((__local float*)As[buf][pb + 3])[pa] = (i < n && k < nk) ? BM(i, k) : 0.0f; }
        } }
    }
    #pragma unroll
    for (int e = 0; e < 1; ++e) {
        const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
        { int i = row0 + pa; int k = 0 + pb;
        if (va1 && i < n && k + 3 < nk) {
            const float4 v = vload4(0, &(AM(i, k)));
            ((__local float*)As2[buf][pb + 0])[pa] = v.x;
            ((__local float*)As2[buf][pb + 1])[pa] = v.y;
            ((__local float*)As2[buf][pb + 2])[pa] = v.z;
            ((__local float*)As2[buf][pb + 3])[pa] = v.w;
        } else {
            { int i = row0 + pa; int k = 0 + pb + 0; ((__local float*)As2[buf][pb + 0])[pa] = (i < n && k < nk) ? AM(i, k) : 0.0f; }
            { int i = row0 + pa; int k = 0 + pb + 1; ((__local float*)As2[buf][pb + 1])[pa] = (i < n && k < nk) ? AM(i, k) : 0.0f; }
            { int i = row0 + pa; int k = 0 + pb + 2; ((__local float*)As2[buf][pb + 2])[pa] = (i < n && k < nk) ? AM(i, k) : 0.0f; }
            { int i = row0 + pa; int k = 0 + pb + 3; ((__local float*)As2[buf][pb + 3])[pa] = (i < n && k < nk) ? AM(i, k) : 0.0f; }
        } }
    }
    #pragma unroll
    for (int e = 0; e < 1; ++e) {
        const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
        { int j = col0 + pa; int k = 0 + pb;
        if (vb0 && j < n && k + 3 < nk) {
            const float4 v = vload4(0, &(AM(j, k)));
            ((__local float*)Bs[buf][pb + 0])[pa] = v.x;
            ((__local float*)Bs[buf][pb + 1])[pa] = v.y;
            ((__local float*)Bs[buf][pb + 2])[pa] = v.z;
            ((__local float*)Bs[buf][pb + 3])[pa] = v.w;
        } else {
            { int j = col0 + pa; int k = 0 + pb + 0; ((__local float*)Bs[buf][pb + 0])[pa] = (j < n && k < nk) ? AM(j, k) : 0.0f; }
            { int j = col0 + pa; int k = 0 + pb + 1; ((__local float*)Bs[buf][pb + 1])[pa] = (j < n && k < nk) ? AM(j, k) : 0.0f; }
            { int j = col0 + pa; int k = 0 + pb + 2; ((__local float*)Bs[buf][pb + 2])[pa] = (j < n && k < nk) ? AM(j, k) : 0.0f; }
            { int j = col0 + pa; int k = 0 + pb + 3; ((__local float*)Bs[buf][pb + 3])[pa] = (j < n && k < nk) ? AM(j, k) : 0.0f; }
        } }
    }
    #pragma unroll
    for (int e = 0; e < 1; ++e) {
        const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
        { int j = col0 + pa; int k = 0 + pb;
        if (vb1 && j < n && k + 3 < nk) {
            const float4 v = vload4(0, &(BM(j, k)));
            ((__local float*)Bs2[buf][pb + 0])[pa] = v.x;
            ((__local float*)Bs2[buf][pb + 1])[pa] = v.y;
            ((__local float*)Bs2[buf][pb + 2])[pa] = v.z;
            ((__local float*)Bs2[buf][pb + 3])[pa] = v.w;
        } else {
            { int j = col0 + pa; int k = 0 + pb + 0; ((__local float*)Bs2[buf][pb + 0])[pa] = (j < n && k < nk) ? BM(j, k) : 0.0f; }
            { int j = col0 + pa; int k = 0 + pb + 1; ((__local float*)Bs2[buf][pb + 1])[pa] = (j < n && k < nk) ? BM(j, k) : 0.0f; }
            { int j = col0 + pa; int k = 0 + pb + 2; ((__local float*)Bs2[buf][pb + 2])[pa] = (j < n && k < nk) ? BM(j, k) : 0.0f; }
            { int j = col0 + pa; int k = 0 + pb + 3; ((__local float*)Bs2[buf][pb + 3])[pa] = (j < n && k < nk) ? BM(j, k) : 0.0f; }
        } }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = 0; t < nk; t += 8) {
        float pa0[4];
        float pa1[4];
        float pb0[4];
        float pb1[4];
        if (t + 8 < nk) {
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
                { int i = row0 + pa; int k = t + 8 + pb;
                if (va0 && i < n && k + 3 < nk) {
                    const float4 v = vload4(0, &(BM(i, k)));
                    pa0[e * 4 + 0] = v.x;
                    pa0[e * 4 + 1] = v.y;
                    pa0[e * 4 + 2] = v.z;
                    pa0[e * 4 + 3] = v.w;
                } else {
                    { int i = row0 + pa; int k = t + 8 + pb + 0; pa0[e * 4 + 0] = (i < n && k < nk) ? BM(i, k) : 0.0f; }
                    { int i = row0 + pa; int k = t + 8 + pb + 1; pa0[e * 4 + 1] = (i < n && k < nk) ? BM(i, k) : 0.0f; }
                    { int i = row0 + pa; int k = t + 8 + pb + 2; pa0[e * 4 + 2] = (i < n && k < nk) ? BM(i, k) : 0.0f; }
                    { int i = row0 + pa; int k = t + 8 + pb + 3; pa0[e * 4 + 3] = (i < n && k < nk) ? BM(i, k) : 0.0f; }
                } }
            }
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
                { int i = row0 + pa; int k = t + 8 + pb;
                if (va1 && i < n && k + 3 < nk) {
                    const float4 v = vload4(0, &(AM(i, k)));
                    pa1[e * 4 + 0] = v.x;
                    pa1[e * 4 + 1] = v.y;
                    pa1[e * 4 + 2] = v.z;
                    pa1[e * 4 + 3] = v.w;
                } else {
                    { int i = row0 + pa; int k = t + 8 + pb + 0; pa1[e * 4 + 0] = (i < n && k < nk) ? AM(i, k) : 0.0f; }
                    { int i = row0 + pa; int k = t + 8 + pb + 1; pa1[e * 4 + 1] = (i < n && k < nk) ? AM(i, k) : 0.0f; }
                    { int i = row0 + pa; int k = t + 8 + pb + 2; pa1[e * 4 + 2] = (i < n && k < nk) ? AM(i, k) : 0.0f; }
                    { int i = row0 + pa; int k = t + 8 + pb + 3; pa1[e * 4 + 3] = (i < n && k < nk) ? AM(i, k) : 0.0f; }
                } }
            }
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
                { int j = col0 + pa; int k = t + 8 + pb;
                if (vb0 && j < n && k + 3 < nk) {
                    const float4 v = vload4(0, &(AM(j, k)));
                    pb0[e * 4 + 0] = v.x;
                    pb0[e * 4 + 1] = v.y;
                    pb0[e * 4 + 2] = v.z;
                    pb0[e * 4 + 3] = v.w;
                } else {
                    { int j = col0 + pa; int k = t + 8 + pb + 0; pb0[e * 4 + 0] = (j < n && k < nk) ? AM(j, k) : 0.0f; }
                    { int j = col0 + pa; int k = t + 8 + pb + 1; pb0[e * 4 + 1] = (j < n && k < nk) ? AM(j, k) : 0.0f; }
                    { int j = col0 + pa; int k = t + 8 + pb + 2; pb0[e * 4 + 2] = (j < n && k < nk) ? AM(j, k) : 0.0f; }
                    { int j = col0 + pa; int k = t + 8 + pb + 3; pb0[e * 4 + 3] = (j < n && k < nk) ? AM(j, k) : 0.0f; }
                } }
            }
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
                { int j = col0 + pa; int k = t + 8 + pb;
                if (vb1 && j < n && k + 3 < nk) {
                    const float4 v = vload4(0, &(BM(j, k)));
                    pb1[e * 4 + 0] = v.x;
                    pb1[e * 4 + 1] = v.y;
                    pb1[e * 4 + 2] = v.z;
                    pb1[e * 4 + 3] = v.w;
                } else {
                    { int j = col0 + pa; int k = t + 8 + pb + 0; pb1[e * 4 + 0] = (j < n && k < nk) ? BM(j, k) : 0.0f; }
                    { int j = col0 + pa; int k = t + 8 + pb + 1; pb1[e * 4 + 1] = (j < n && k < nk) ? BM(j, k) : 0.0f; }
                    { int j = col0 + pa; int k = t + 8 + pb + 2; pb1[e * 4 + 2] = (j < n && k < nk) ? BM(j, k) : 0.0f; }
                    { int j = col0 + pa; int k = t + 8 + pb + 3; pb1[e * 4 + 3] = (j < n && k < nk) ? BM(j, k) : 0.0f; }
                } }
            }
        }
        if (t + 8 <= nk) {
            #pragma unroll
            for (int kk = 0; kk < 8; ++kk) {
                float ra0[8];
                { const float4 v = As[buf][kk][ty]; ra0[0] = v.x; ra0[1] = v.y; ra0[2] = v.z; ra0[3] = v.w; }
                { const float4 v = As[buf][kk][ty + 16]; ra0[4] = v.x; ra0[5] = v.y; ra0[6] = v.z; ra0[7] = v.w; }
                float ra1[8];
                { const float4 v = As2[buf][kk][ty]; ra1[0] = v.x; ra1[1] = v.y; ra1[2] = v.z; ra1[3] = v.w; }
                { const float4 v = As2[buf][kk][ty + 16]; ra1[4] = v.x; ra1[5] = v.y; ra1[6] = v.z; ra1[7] = v.w; }
                float rb0[8];
                { const float4 v = Bs[buf][kk][tx]; rb0[0] = v.x; rb0[1] = v.y; rb0[2] = v.z; rb0[3] = v.w; }
                { const float4 v = Bs[buf][kk][tx + 16]; rb0[4] = v.x; rb0[5] = v.y; rb0[6] = v.z; rb0[7] = v.w; }
                float rb1[8];
                { const float4 v = Bs2[buf][kk][tx]; rb1[0] = v.x; rb1[1] = v.y; rb1[2] = v.z; rb1[3] = v.w; }
                { const float4 v = Bs2[buf][kk][tx + 16]; rb1[4] = v.x; rb1[5] = v.y; rb1[6] = v.z; rb1[7] = v.w; }
                #pragma unroll
                for (int m = 0; m < 64; ++m)
                    acc[m] += alpha * rb0[m % 8] * ra0[m / 8] + alpha * rb1[m % 8] * ra1[m / 8];
            }
        } else {
            for (int kk = 0; kk < nk - t; ++kk) {
                float ra0[8];
                { const float4 v = As[buf][kk][ty]; ra0[0] = v.x; ra0[1] = v.y; ra0[2] = v.z; ra0[3] = v.w; }
                { const float4 v = As[buf][kk][ty + 16]; ra0[4] = v.x; ra0[5] = v.y; ra0[6] = v.z; ra0[7] = v.w; }
                float ra1[8];
                { const float4 v = As2[buf][kk][ty]; ra1[0] = v.x; ra1[1] = v.y; ra1[2] = v.z; ra1[3] = v.w; }
                { const float4 v = As2[buf][kk][ty + 16]; ra1[4] = v.x; ra1[5] = v.y; ra1[6] = v.z; ra1[7] = v.w; }
                float rb0[8];
                { const float4 v = Bs[buf][kk][tx]; rb0[0] = v.x; rb0[1] = v.y; rb0[2] = v.z; rb0[3] = v.w; }
                { const float4 v = Bs[buf][kk][tx + 16]; rb0[4] = v.x; rb0[5] = v.y; rb0[6] = v.z; rb0[7] = v.w; }
                float rb1[8];
                { const float4 v = Bs2[buf][kk][tx]; rb1[0] = v.x; rb1[1] = v.y; rb1[2] = v.z; rb1[3] = v.w; }
                { const float4 v = Bs2[buf][kk][tx + 16]; rb1[4] = v.x; rb1[5] = v.y; rb1[6] = v.z; rb1[7] = v.w; }
                #pragma unroll
                for (int m = 0; m < 64; ++m)
                    acc[m] += alpha * rb0[m % 8] * ra0[m / 8] + alpha * rb1[m % 8] * ra1[m / 8];
            }
        }
        if (t + 8 < nk) {
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
                ((__local float*)As[1 - buf][pb + 0])[pa] = pa0[e * 4 + 0];
                ((__local float*)As[1 - buf][pb + 1])[pa] = pa0[e * 4 + 1];
                ((__local float*)As[1 - buf][pb + 2])[pa] = pa0[e * 4 + 2];
                ((__local float*)As[1 - buf][pb + 3])[pa] = pa0[e * 4 + 3];
            }
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
                ((__local float*)As2[1 - buf][pb + 0])[pa] = pa1[e * 4 + 0];
                ((__local float*)As2[1 - buf][pb + 1])[pa] = pa1[e * 4 + 1];
                ((__local float*)As2[1 - buf][pb + 2])[pa] = pa1[e * 4 + 2];
                ((__local float*)As2[1 - buf][pb + 3])[pa] = pa1[e * 4 + 3];
            }
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
                ((__local float*)Bs[1 - buf][pb + 0])[pa] = pb0[e * 4 + 0];
                ((__local float*)Bs[1 - buf][pb + 1])[pa] = pb0[e * 4 + 1];
                ((__local float*)Bs[1 - buf][pb + 2])[pa] = pb0[e * 4 + 2];
                ((__local float*)Bs[1 - buf][pb + 3])[pa] = pb0[e * 4 + 3];
            }
            #pragma unroll
            for (int e = 0; e < 1; ++e) {
                const int pa = (tid + e * 256) / 2, pb = (tid + e * 256) % 2 * 4;
                ((__local float*)Bs2[1 - buf][pb + 0])[pa] = pb1[e * 4 + 0];
                ((__local float*)Bs2[1 - buf][pb + 1])[pa] = pb1[e * 4 + 1];
                ((__local float*)Bs2[1 - buf][pb + 2])[pa] = pb1[e * 4 + 2];
                ((__local float*)Bs2[1 - buf][pb + 3])[pa] = pb1[e * 4 + 3];
            }
            buf = 1 - buf;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    #pragma unroll
    for (int m = 0; m < 64; ++m) {
        int i = row0 + ty * 4 + m / 8 % 4 + m / 32 * 64;
        int j = col0 + tx * 4 + m % 4 + m % 8 / 4 * 64;
        if (!(i >= n || j >= n)) {
            c[i * n + j] = acc[m];
        }
    }
}
