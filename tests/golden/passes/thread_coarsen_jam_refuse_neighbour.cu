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
    phi[cell + 1] -= 0.5f * v;
}
// ----- EXPECTED
// REFUSED: phi is written at phi[cell]: the points must touch their own elements only
