// zoo: batched small matrix-vector products y_b = M_b x_b (16x16), one thread per matrix looping over its rows
#include "../zoo.h"

#define NBATCH 131072
#define D 16

__global__ void batched_gemv16(const float* mats, const float* xs, float* ys, int nbatch)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nbatch)
        return;
    for (int r = 0; r < D; r++) {
        float s = 0.0f;
        for (int c = 0; c < D; c++)
            s += mats[(b * D + r) * D + c] * xs[b * D + c];
        ys[b * D + r] = s;
    }
}

int main()
{
    float* hm = zoo_rand((size_t)NBATCH * D * D, 40);
    float* hx = zoo_rand((size_t)NBATCH * D, 41);
    float *dm, *dx, *dy;
    ZOO_CHECK(cudaMalloc(&dm, (size_t)NBATCH * D * D * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dx, (size_t)NBATCH * D * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&dy, (size_t)NBATCH * D * sizeof(float)));
    zoo_upload(dm, hm, (size_t)NBATCH * D * D);
    zoo_upload(dx, hx, (size_t)NBATCH * D);
    batched_gemv16<<<NBATCH / 128, 128>>>(dm, dx, dy, NBATCH);
    float* hy = zoo_download(dy, (size_t)NBATCH * D);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < (size_t)NBATCH * D; e += 997, checked++) {
        size_t b = e / D, r = e % D;
        double s = 0;
        for (int c = 0; c < D; c++) s += (double)hm[(b * D + r) * D + c] * hx[b * D + c];
        bad += !zoo_close(s, hy[e]);
    }
    return zoo_report("batched_gemv16", bad, checked, hy, (size_t)NBATCH * D);
}
