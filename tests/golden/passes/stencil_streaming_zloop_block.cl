// RUN: stencil-streaming{block=16x8}
// ----- INPUT
// a 2-D grid marching along z inside a guarded block; the 7-point update writes another array
__kernel void heat(__global const float* u, __global float* unew, const float c0, const float c1, const int nx, const int ny,
                   const int nz)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x > 0 && x < nx - 1 && y > 0 && y < ny - 1) {
        for (int z = 1; z < nz - 1; z++) {
            int c = (z * ny + y) * nx + x;
            unew[c] = c0 * u[c] + c1 * (u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] + u[c - nx * ny] + u[c + nx * ny]);
        }
    }
}
// ----- EXPECTED
// a 2-D grid marching along z inside a guarded block; the 7-point update writes another array
__kernel void heat(__global const float* u, __global float* unew, const float c0, const float c1, const int nx, const int ny,
                   const int nz)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    __local float u_tile[10][18];
    const bool active = x > 0 && x < nx - 1 && y > 0 && y < ny - 1;
    const bool own = 1 < ny - 1 && 1 < nx - 1 && ((y >= 0 && y < ny && x >= 1 && x < nx - 1) || (y >= 1 && y < ny - 1 && x >= 0 && x < nx));
    const int zlo = 1;
    const int zhi = nz - 1;
    float u_zm1 = 0, u_z0 = 0, u_zp1 = 0;
    if (active) u_zm1 = u[nx*ny * (zlo - 1) + nx * y + x];
    if (active || (own && zlo < zhi)) u_z0 = u[nx*ny * (zlo) + nx * y + x];
    for (int z = zlo; z < zhi; z++) {
        if (active || (own && z + 1 < zhi)) u_zp1 = u[nx*ny * (z + 1) + nx * y + x];
        barrier(CLK_LOCAL_MEM_FENCE);
        u_tile[get_local_id(1) + 1][get_local_id(0) + 1] = u_z0;
        for (int ly = get_local_id(1); ly < 10; ly += 8)
            for (int lx = get_local_id(0); lx < 18; lx += 16) {
                if (!(ly < 1 || ly >= 9 || lx < 1 || lx >= 17))
                    continue;
                int gy = (int)get_group_id(1) * 8 + ly - 1;
                int gx = (int)get_group_id(0) * 16 + lx - 1;
                u_tile[ly][lx] = (1 < ny - 1 && 1 < nx - 1 && ((gy >= 0 && gy < ny && gx >= 1 && gx < nx - 1) || (gy >= 1 && gy < ny - 1 && gx >= 0 && gx < nx))) ? u[nx*ny * z + nx * gy + gx] : (float)0;
            }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (active) {
            int c = (z * ny + y) * nx + x;
            unew[c] = c0 * u_z0 + c1 * (u_tile[get_local_id(1) + 1][get_local_id(0)] + u_tile[get_local_id(1) + 1][get_local_id(0) + 2] + u_tile[get_local_id(1)][get_local_id(0) + 1] + u_tile[get_local_id(1) + 2][get_local_id(0) + 1] + u_zm1 + u_zp1);
        }
        u_zm1 = u_z0;
        u_z0 = u_zp1;
    }
}
