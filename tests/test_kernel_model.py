"""The kernel model on small kernels of our own: mapping, affine accesses, loops, reductions, guards, derived facts."""
from __future__ import annotations

from s2s.lang.affine import Poly
from s2s.lang.kernel_model import SM_SPREAD, kernel_model, parallelism
from s2s.lang.target_device import TargetDevice

SYRK = b"""
__global__ void syrk(int N, int M, float alpha, float beta, const float* a, float* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if ((i < N) && (j < N)) {
        c[i * N + j] *= beta;
        for (int k = 0; k < M; k++) {
            c[i * N + j] += alpha * a[i * M + k] * a[j * M + k];
        }
    }
}
"""

GEMV_OPENCL = b"""
__kernel void gemv_t(__global const double* A, __global const double* x, __global double* y, const int n)
{
    int col = get_global_id(0);
    if (col >= n) return;
    double s = 0.0;
    for (int r = 0; r <= n - 1; ++r)
        s = s + A[r * n + col] * x[r];
    y[col] = s;
}
"""

COVARIANCE = b"""
#define IDX(r, c) ((r) * m + (c))
__global__ void cov(int m, int n, const float* data, float* sym, const int* perm)
{
    int j1 = threadIdx.x + blockDim.x * blockIdx.x + 1;
    if (j1 <= m) {
        for (int j2 = j1; j2 < m + 1; j2++) {
            int at = j1 * (m + 1) + j2;
            sym[at] = 0.0f;
            for (int i = 1; i < n + 1; i++)
                sym[at] += data[i * (m + 1) + j1] * data[i * (m + 1) + j2];
            sym[j2 * (m + 1) + j1] = sym[at];
            sym[perm[j2]] = sym[j1 / 2];
        }
    }
}
"""


def test_mapping_accesses_and_reuse_of_a_symmetric_rank_k_update() -> None:
    m = kernel_model(SYRK, "cuda")
    assert m is not None and m.name == "syrk"
    assert [(t.var, t.axis, t.kind, t.offset.is_zero) for t in m.mapping] == [("j", "x", "global", True), ("i", "y", "global", True)]
    assert m.axes == ("x", "y") and m.var_for("y") == "i"
    by_text = {a.text: a for a in m.accesses}
    row, col, out = by_text["a[i * M + k]"], by_text["a[j * M + k]"], m.accesses[0]
    assert str(row.flat) == "M*i + k" and row.loops == ("k",)
    # a[i*M+k] is the same for every lane of a warp and shared by the block's x threads; a[j*M+k] strides by M
    assert row.pattern == "uniform" and row.shared_by(m.axes) == ("x",)
    assert col.pattern == "strided" and col.lane_stride == Poly.name("M") and col.shared_by(m.axes) == ("y",)
    assert out.pattern == "coalesced" and out.read and out.write and out.shared_by(m.axes) == ()
    assert str(out.threads[0]) == "N*blockDim.y*blockIdx.y + N*threadIdx.y + blockDim.x*blockIdx.x + threadIdx.x"
    assert [(lp.var, str(lp.lower), str(lp.trip), lp.step) for lp in m.loops] == [("k", "0", "M", 1)]
    red = m.reductions[0]
    assert (red.target, red.into, red.over, red.op) == ("c[i * N + j]", "global", "k", "+=")
    g = m.guards[0]
    assert g.kind == "block" and [(v, str(b)) for v, b in g.upper] == [("i", "N"), ("j", "N")]
    # alpha*a*a and the += per iteration over c, a, a (4 bytes each)
    assert (m.flops, m.bytes) == (3, 12) and m.intensity == 0.25


def test_opencl_column_walk_with_an_early_exit() -> None:
    m = kernel_model(GEMV_OPENCL, "opencl")
    assert m is not None and [(t.var, t.axis, t.kind) for t in m.mapping] == [("col", "x", "global")]
    assert [(lp.var, str(lp.upper), str(lp.trip)) for lp in m.loops] == [("r", "n", "n")]
    a, x = m.accesses[0], m.accesses[1]
    assert (a.array, a.pattern, a.element_bytes) == ("A", "coalesced", 8)  # neighbouring columns: coalesced
    assert (x.array, x.pattern) == ("x", "uniform")
    assert m.reductions[0].target == "s" and m.reductions[0].into == "local" and m.reductions[0].op == "= x +"
    g = m.guards[0]
    assert g.kind == "return" and [(v, str(b)) for v, b in g.upper] == [("col", "n")]
    assert (m.flops, m.bytes) == (2, 16)


def test_offsets_triangular_loops_locals_and_non_affine_accesses() -> None:
    m = kernel_model(COVARIANCE, "cuda")
    assert m is not None
    (t,) = m.mapping
    assert (t.var, t.axis, str(t.offset)) == ("j1", "x", "1")
    outer, inner = m.loops
    assert (outer.var, str(outer.lower), str(outer.trip), outer.parent) == ("j2", "j1", "-j1 + m + 1", -1)
    assert (inner.var, str(inner.trip), inner.parent, inner.depth) == ("i", "n", 0, 2)
    texts = {a.text: a for a in m.accesses}
    # a local defined once (`at`) is substituted into the index
    assert str(texts["sym[at]"].flat) == "j1 + j1*m + j2"
    assert texts["data[i * (m + 1) + j1]"].pattern == "coalesced"
    # j2 starts at j1: it moves with the thread, so neighbouring lanes read neighbouring elements
    assert texts["data[i * (m + 1) + j2]"].pattern == "coalesced" and texts["data[i * (m + 1) + j2]"].loops == ("j2", "i")
    assert not texts["sym[perm[j2]]"].affine and texts["sym[perm[j2]]"].pattern == "unknown"
    assert not texts["sym[j1 / 2]"].affine
    assert [(r.target, r.over, r.into) for r in m.reductions] == [("sym[at]", "i", "global")]
    assert [(v, str(b)) for v, b in m.guards[0].upper] == [("j1", "m + 1")]


def test_loops_that_start_where_the_thread_says() -> None:
    src = b"""
__global__ void spmv(const int* rowptr, const int* cols, const float* vals, const float* x, float* y, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n) {
        float s = 0.0f;
        for (int k = rowptr[row]; k < rowptr[row + 1]; k++)
            s += vals[k] * x[cols[k]];
        y[row] = s;
    }
}
"""
    m = kernel_model(src, "cuda")
    assert m is not None and m.loops[0].lower is None and m.loops[0].trip is None
    texts = {a.text: a for a in m.accesses}
    assert texts["vals[k]"].affine and texts["vals[k]"].pattern == "unknown"  # k starts at a loaded value per thread
    assert not texts["x[cols[k]]"].affine and texts["rowptr[row + 1]"].pattern == "coalesced"
    assert [(r.target, r.over) for r in m.reductions] == [("s", "k")]


def test_accesses_through_function_like_macros() -> None:
    src = b"""
#define AT(k, i) A[(k) * M + (i)]
#define OUT(r, s) \\
    C[(r) * n + (s)]
__global__ void tn(const float* A, float* C, int M, int n, int K)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    for (int k = 0; k < K; k++)
        OUT(i, j) += AT(k, i) * AT(k, j);
}
"""
    m = kernel_model(src, "cuda")
    assert m is not None
    by = {a.text: a for a in m.accesses}
    assert (by["AT(k, i)"].array, str(by["AT(k, i)"].flat), by["AT(k, i)"].pattern) == ("A", "M*k + i", "uniform")
    assert by["AT(k, j)"].pattern == "coalesced" and by["OUT(i, j)"].write and by["OUT(i, j)"].read
    assert [(r.target, r.into, r.over) for r in m.reductions] == [("OUT(i, j)", "global", "k")]


def test_multi_dimensional_subscripts_and_local_thread_indices() -> None:
    src = b"""
__global__ void k(float a[64][64], float* out, int n)
{
    int tx = threadIdx.x;
    for (int r = 0; r < 64; r += 2)
        out[r * n + tx] = a[r][tx] + a[tx][r];
}
"""
    m = kernel_model(src, "cuda")
    assert m is not None and [(t.var, t.kind) for t in m.mapping] == [("tx", "local")]
    assert m.loops[0].step == 2 and m.loops[0].trip is None
    texts = {a.text: a for a in m.accesses}
    assert [str(p) for p in texts["a[r][tx]"].index] == ["r", "tx"] and texts["a[r][tx]"].pattern == "coalesced"
    assert texts["a[tx][r]"].pattern == "strided" and texts["a[tx][r]"].lane_stride is None  # by a row per lane


def test_launch_parallelism_against_the_device() -> None:
    rows = parallelism((16, 1, 1), (256, 1, 1))  # one thread per row of a 4096-row matrix
    assert rows.threads == 4096 and rows.blocks == 16 and rows.underfilled
    assert rows.resident == 132 * 2048 and abs(rows.occupancy - 4096 / (132 * 2048)) < 1e-12
    assert abs(rows.fill - rows.occupancy * (16 / 132) ** SM_SPREAD) < 1e-12  # 16 of the 132 SMs get a block
    full = parallelism((256, 256, 1), (16, 16, 1))
    assert full.fill == 1.0 and not full.underfilled
    small = TargetDevice(name="small", sms=2, threads_per_sm=1024, blocks_per_sm=4)
    assert parallelism((8, 1, 1), (32, 1, 1), small).resident == 2 * 4 * 32  # the block limit binds, not threads
