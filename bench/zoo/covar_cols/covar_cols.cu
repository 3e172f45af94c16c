// zoo: covariance-like symmetric product, one thread per column j1 looping over j2 >= j1 (512 threads: underfilled)
#include "../zoo.h"

#define NROWS 512
#define MCOLS 512

__global__ void covar_cols(const float* data, float* symmat, float scale)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x;
    if (j1 < MCOLS) {
        for (int j2 = j1; j2 < MCOLS; j2++) {
            symmat[j1 * MCOLS + j2] = 0.0f;
            for (int i = 0; i < NROWS; i++)
                symmat[j1 * MCOLS + j2] += data[i * MCOLS + j1] * data[i * MCOLS + j2];
            symmat[j1 * MCOLS + j2] *= scale;
            symmat[j2 * MCOLS + j1] = symmat[j1 * MCOLS + j2];
        }
    }
}

int main()
{
    float* hd = zoo_rand((size_t)NROWS * MCOLS, 37);
    float *dd, *ds;
    ZOO_CHECK(cudaMalloc(&dd, (size_t)NROWS * MCOLS * sizeof(float)));
    ZOO_CHECK(cudaMalloc(&ds, (size_t)MCOLS * MCOLS * sizeof(float)));
    zoo_upload(dd, hd, (size_t)NROWS * MCOLS);
    covar_cols<<<MCOLS / 256, 256>>>(dd, ds, 1.0f / (NROWS - 1));
    float* out = zoo_download(ds, (size_t)MCOLS * MCOLS);
    int bad = 0, checked = 0;
    for (size_t e = 0; e < (size_t)MCOLS * MCOLS; e += 10007, checked++) {
        size_t a = e / MCOLS, b = e % MCOLS;
        double s = 0;
        for (int i = 0; i < NROWS; i++) s += (double)hd[(size_t)i * MCOLS + a] * hd[(size_t)i * MCOLS + b];
        bad += !zoo_close(s / (NROWS - 1), out[e]);
    }
    return zoo_report("covar_cols", bad, checked, out, (size_t)MCOLS * MCOLS);
}
