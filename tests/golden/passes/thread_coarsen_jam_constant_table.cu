// RUN: thread-coarsen{axis=x factor=8 jam=1}
// ----- INPUT
// a potential on a 2-D lattice from a table of charges in constant memory: every point loops over the whole table,
// the lattice's row pitch is the grid's width (no guard: the launch covers the lattice exactly)
#define NCHARGES 512
__constant__ float4 charges[NCHARGES];

__global__ void lattice_potential(int ncharges, float h, float *phi)
{
    unsigned int ix = __umul24(blockIdx.x, blockDim.x) + threadIdx.x;
    unsigned int iy = __umul24(blockIdx.y, blockDim.y) + threadIdx.y;
    unsigned int cell = __umul24(gridDim.x, blockDim.x) * iy + ix;
    float px = h * ix, py = h * iy;
    float v = 0.0f;
    for (int q = 0; q < ncharges; ++q) {
        float4 c = charges[q];
        float dx = px - c.x, dy = py - c.y;
        v += c.w / sqrtf(dx * dx + dy * dy + c.z);
    }
    phi[cell] += v;
}
// ----- EXPECTED
// a potential on a 2-D lattice from a table of charges in constant memory: every point loops over the whole table,
// the lattice's row pitch is the grid's width (no guard: the launch covers the lattice exactly)
#define NCHARGES 512
__constant__ float4 charges[NCHARGES];

__global__ void lattice_potential(int ncharges, float h, float *phi)
{
    if (blockIdx.x * 8 >= gridDim.x) return;  // blocks blockIdx.x * 8 ... blockIdx.x * 8 + 7 are done here
    unsigned int ix[8];
    unsigned int iy[8];
    unsigned int cell[8];
    float px[8];
    float py[8];
    float v[8];
    #pragma unroll
    for (int cx = 0; cx < 8; ++cx) {
        ix[cx] = (blockIdx.x * 8 + cx) * blockDim.x + threadIdx.x;
        iy[cx] = __umul24(blockIdx.y, blockDim.y) + threadIdx.y;
        cell[cx] = __umul24(gridDim.x, blockDim.x) * iy[cx] + ix[cx];
        px[cx] = h * ix[cx];
        py[cx] = h * iy[cx];
        v[cx] = 0.0f;
    }
    for (int q = 0; q < ncharges; ++q) {
        #pragma unroll
        for (int cx = 0; cx < 8; ++cx)
            {
                float4 c = charges[q];
                float dx = px[cx] - c.x, dy = py[cx] - c.y;
                v[cx] += c.w / sqrtf(dx * dx + dy * dy + c.z);
            }
    }
    #pragma unroll
    for (int cx = 0; cx < 8; ++cx)
        if (blockIdx.x * 8 + cx < gridDim.x) {
            phi[cell[cx]] += v[cx];
        }
}
