// RUN: delinearize-2d{block=8x8x4}
// ----- INPUT
// a batch of small products, the flat index bounded as a whole and split inside the guarded block
__global__ void batched_mm(const float* A, const float* B, float* C, int batch, int dim)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < batch * dim * dim) {
        int b = t / (dim * dim);
        int r = (t / dim) % dim;
        int c = t % dim;
        float s = 0.0f;
        for (int k = 0; k < dim; k++)
            s += A[(b * dim + r) * dim + k] * B[(b * dim + k) * dim + c];
        C[(b * dim + r) * dim + c] = s;
    }
}
// ----- EXPECTED
// a batch of small products, the flat index bounded as a whole and split inside the guarded block
__global__ void batched_mm(const float* A, const float* B, float* C, int batch, int dim)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    int b = blockIdx.z * blockDim.z + threadIdx.z;
    if (b < batch && c < dim && r < dim) {
        float s = 0.0f;
        for (int k = 0; k < dim; k++)
            s += A[(b * dim + r) * dim + k] * B[(b * dim + k) * dim + c];
        C[(b * dim + r) * dim + c] = s;
    }
}
