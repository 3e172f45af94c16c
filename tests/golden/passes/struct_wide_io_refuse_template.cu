// RUN: struct-wide-io
// ----- INPUT
template <typename T>
__global__ void copy(const T* in, T* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        T v = in[i];
        out[i] = v;
    }
}
// ----- EXPECTED
// REFUSED: not defined in the kernel file
