// RUN: stencil-tiling
// ----- INPUT
// the boundary is copied by an early exit that tests the ends of the range (==): the interior's 4-point footprint is
// tiled, the copy keeps its own global read
#define IDX(i, j, n) ((i) * (n) + (j))
__kernel void relax(__global const float* u, __global const float* f, __global float* u_new, const int n, const float h2)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i >= n || j >= n) return;

    if (i == 0 || j == 0 || i == n - 1 || j == n - 1) {
        u_new[IDX(i, j, n)] = u[IDX(i, j, n)];
        return;
    }

    u_new[IDX(i, j, n)] = 0.25f * (u[IDX(i - 1, j, n)] + u[IDX(i + 1, j, n)] + u[IDX(i, j - 1, n)] + u[IDX(i, j + 1, n)] +
                                   h2 * f[IDX(i, j, n)]);
}
// ----- EXPECTED
// the boundary is copied by an early exit that tests the ends of the range (==): the interior's 4-point footprint is
// tiled, the copy keeps its own global read
#define IDX(i, j, n) ((i) * (n) + (j))
__kernel void relax(__global const float* u, __global const float* f, __global float* u_new, const int n, const float h2)
{
    __local float u_tile[10][34];
    for (int ly = get_local_id(1); ly < 10; ly += 8)
        for (int lx = get_local_id(0); lx < 34; lx += 32) {
            int gy = (int)get_group_id(1) * 8 + ly - 1;
            int gx = (int)get_group_id(0) * 32 + lx - 1;
            u_tile[ly][lx] = (1 < n && 1 < n - 1 && ((gy >= 0 && gy < n - 2 && gx >= 1 && gx < n - 1) || (gy >= 1 && gy < n - 1 && gx >= 0 && gx < n - 2) || (gy >= 1 && gy < n - 1 && gx >= 2 && gx < n) || (gy >= 2 && gy < n && gx >= 1 && gx < n - 1))) ? u[n * gy + gx] : (float)0;
        }
    barrier(CLK_LOCAL_MEM_FENCE);
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i >= n || j >= n) return;

    if (i == 0 || j == 0 || i == n - 1 || j == n - 1) {
        u_new[IDX(i, j, n)] = u[IDX(i, j, n)];
        return;
    }

    u_new[IDX(i, j, n)] = 0.25f * (u_tile[get_local_id(1)][get_local_id(0) + 1] + u_tile[get_local_id(1) + 2][get_local_id(0) + 1] + u_tile[get_local_id(1) + 1][get_local_id(0)] + u_tile[get_local_id(1) + 1][get_local_id(0) + 2] +
                                   h2 * f[IDX(i, j, n)]);
}
