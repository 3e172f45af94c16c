// RUN: inner-loop-threads
// ----- INPUT
// one thread per column j1 (1-based), a triangular walk over j2 and a mirrored store
__global__ void covar(int m, int n, const float* data, float* symmat)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x + 1;
    if (j1 <= m) {
        for (int j2 = j1; j2 <= m; j2++) {
            int at = j1 * (m + 1) + j2;
            symmat[at] = 0.0f;
            for (int i = 1; i < n + 1; i++) {
                symmat[at] += data[i * (m + 1) + j1] * data[i * (m + 1) + j2];
            }
            symmat[j2 * (m + 1) + j1] = symmat[at];
        }
    }
}
// ----- EXPECTED
// one thread per column j1 (1-based), a triangular walk over j2 and a mirrored store
__global__ void covar(int m, int n, const float* data, float* symmat)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x + 1;
    int j2 = blockIdx.y * blockDim.y + threadIdx.y + 1;
    if (j1 <= m && j2 >= j1 && j2 <= m) {
        int at = j1 * (m + 1) + j2;
        symmat[at] = 0.0f;
        for (int i = 1; i < n + 1; i++) {
            symmat[at] += data[i * (m + 1) + j1] * data[i * (m + 1) + j2];
        }
        symmat[j2 * (m + 1) + j1] = symmat[at];
    }
}
