"""The kernel zoo (bench/zoo/<app>/<app>.cu, kernel <app>): what each kernel is, the work of one launch, the vendor
library call that does the same job, and the mep.toml edits extraction cannot make by itself.

`sizes` must equal the app's #defines (tests/test_zoo.py checks them against the extracted mep.toml); `work` gives the
compulsory DRAM bytes (each array touched once, fp32 = 4 bytes) and the floating-point operations of one launch
(sqrt, rsqrt and division count one; symmetric products count the triangle they need, not the full square).
`fixes` are what a user would write into mep.toml by hand; each says why, and the benchmark reports them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ZooKernel:
    name: str
    family: str  # blas1 | blas2 | blas3 | batched | stencil | reduction | scan | histogram | transpose | nbody | spmv
    style: str  # how it is written (what makes it differ from its sibling)
    sizes: dict[str, int]
    work: Callable[[dict[str, int]], tuple[float, float]]  # sizes -> (bytes, flops)
    vendor: str = ""  # key of bench/zoo_vendor.py's table: the library call doing the same job ("" when none does)
    fixes: dict[str, dict[str, Any]] = field(default_factory=dict)  # params.NAME / timing -> {field: value}
    why_fixed: str = ""
    capture: bool = False  # generated inputs cannot hold the kernel's invariants: run the app once and capture its data
    cost: int = 1  # relative device time of an optimize run (parts are balanced by it)


F = 4.0  # bytes per float


def _k(name: str, family: str, style: str, sizes: dict[str, int], work: Callable[[dict[str, int]], tuple[float, float]],
       **kw: Any) -> ZooKernel:
    return ZooKernel(name, family, style, sizes, work, **kw)


ZOO: tuple[ZooKernel, ...] = (
    # BLAS-1
    _k("dot_atomic", "blas1", "grid-stride loop, per-thread partial, atomicAdd per thread into global",
       {"N": 1 << 24}, lambda s: (2 * s["N"] * F, 2 * s["N"]), vendor="dot"),
    _k("dot_blocks", "blas1", "one element per thread, shared-memory tree, one partial per block",
       {"N": 1 << 24, "BLOCK": 256}, lambda s: ((2 * s["N"] + s["N"] // s["BLOCK"]) * F, 2 * s["N"]), vendor="dot"),
    _k("axpy", "blas1", "one element per thread, explicit index", {"N": 1 << 26},
       lambda s: (3 * s["N"] * F, 2 * s["N"]), vendor="axpy"),
    _k("axpby_strided", "blas1", "alpha/beta, indexing macros with an increment, grid-stride loop over a fixed grid",
       {"N": 1 << 26}, lambda s: (3 * s["N"] * F, 3 * s["N"]), vendor="axpby",
       fixes={"params.y": {"role": "inout"}}, why_fixed="y is written through the macro Y(i): the role analysis reads it as an input"),
    # BLAS-2
    _k("gemv_rows", "blas2", "row-major, one thread per row (4096 threads)", {"N": 4096},
       lambda s: ((s["N"] ** 2 + 2 * s["N"]) * F, 2 * s["N"] ** 2), vendor="gemv_n"),
    _k("gemv_cols", "blas2", "A^T x, one thread per column, accumulating in global memory", {"NROWS": 4096, "NCOLS": 4096},
       lambda s: ((s["NROWS"] * s["NCOLS"] + s["NROWS"] + s["NCOLS"]) * F, 2 * s["NROWS"] * s["NCOLS"]), vendor="gemv_t"),
    _k("gemv_colmajor", "blas2", "alpha/beta, column-major A behind a Fortran-style macro, one thread per row",
       {"M": 4096, "NN": 4096}, lambda s: ((s["M"] * s["NN"] + s["NN"] + 2 * s["M"]) * F, 2 * s["M"] * s["NN"] + 3 * s["M"]),
       vendor="gemv_colmajor"),
    _k("ger", "blas2", "rank-1 update, 2-D grid", {"N": 8192},
       lambda s: ((2 * s["N"] ** 2 + 2 * s["N"]) * F, 3 * s["N"] ** 2), vendor="ger"),
    # BLAS-3
    _k("gemm_naive", "blas3", "row-major, 2-D grid, register accumulator", {"N": 2048},
       lambda s: (3 * s["N"] ** 2 * F, 2 * s["N"] ** 3), vendor="gemm", cost=2),
    _k("gemm_scaled", "blas3", "alpha/beta, size macros NI/NJ/NK, accumulating in global memory",
       {"NI": 2048, "NJ": 2048, "NK": 2048},
       lambda s: ((s["NI"] * s["NK"] + s["NK"] * s["NJ"] + 2 * s["NI"] * s["NJ"]) * F, 2 * s["NI"] * s["NJ"] * s["NK"]),
       vendor="gemm_scaled", cost=2),
    _k("gemm_colmajor", "blas3", "column-major through IDX2C, 1-D grid, one thread per output", {"N": 2048},
       lambda s: (3 * s["N"] ** 2 * F, 2 * s["N"] ** 3), vendor="gemm", cost=2),
    _k("gemm_tn", "blas3", "A^T B (A[k][i] . B[k][j]) through 2-D macros", {"M": 2048, "K": 2048, "NJ": 2048},
       lambda s: ((s["K"] * s["M"] + s["K"] * s["NJ"] + s["M"] * s["NJ"]) * F, 2 * s["M"] * s["NJ"] * s["K"]),
       vendor="gemm_tn", cost=2),
    _k("syrk", "blas3", "a[i*M+k]*a[j*M+k], alpha/beta, accumulating in global memory", {"N": 2048, "M": 2048},
       lambda s: ((s["N"] * s["M"] + 2 * s["N"] ** 2) * F, s["N"] * (s["N"] + 1) * s["M"]), vendor="syrk", cost=3),
    _k("syrk_lower", "blas3", "lower triangle of A^T A, 1-D grid, early return above the diagonal", {"N": 2048, "K": 2048},
       lambda s: ((s["K"] * s["N"] + s["N"] * (s["N"] + 1) // 2) * F, s["N"] * (s["N"] + 1) * s["K"]), vendor="syrk_t", cost=2),
    _k("syr2k", "blas3", "rank-2k update through 2-D macros, local accumulator", {"N": 2048, "M": 1024},
       lambda s: ((2 * s["N"] * s["M"] + 2 * s["N"] ** 2) * F, 2 * s["N"] * (s["N"] + 1) * s["M"]), vendor="syr2k",
       fixes={"params.c": {"role": "inout"}}, why_fixed="c is written through the macro C2(i, j): the role analysis reads it as an input",
       cost=2),
    _k("trsm_cols", "blas3", "forward substitution, one thread per right-hand side (8192 threads)", {"N": 512, "NRHS": 8192},
       lambda s: ((s["N"] ** 2 // 2 + 2 * s["N"] * s["NRHS"]) * F, s["N"] ** 2 * s["NRHS"]), vendor="trsm", capture=True, cost=3),
    _k("covar_cols", "blas3", "covariance-like: one thread per column j1 looping over j2 >= j1 (512 threads)",
       {"NROWS": 512, "MCOLS": 512},
       lambda s: ((s["NROWS"] * s["MCOLS"] + s["MCOLS"] ** 2) * F, s["MCOLS"] * (s["MCOLS"] + 1) * s["NROWS"]), vendor="covar",
       fixes={"timing": {"repetitions": 10}}, why_fixed="one launch takes tens of ms: fewer timed repetitions", cost=3),
    _k("batched_gemm8", "batched", "8x8 products, one thread per output element", {"BATCH": 262144, "DIM": 8},
       lambda s: (3 * s["BATCH"] * 64 * F, 2 * s["BATCH"] * 512), vendor="batched_gemm8"),
    _k("batched_gemv16", "batched", "16x16 matrix-vector, one thread per matrix looping over rows", {"NBATCH": 131072, "D": 16},
       lambda s: ((s["NBATCH"] * (256 + 32)) * F, 2 * s["NBATCH"] * 256), vendor="batched_gemv16"),
    # stencils
    _k("jacobi2d", "stencil", "5-point, 2-D grid, explicit arithmetic", {"NX": 4096, "NY": 4096},
       lambda s: (2 * s["NX"] * s["NY"] * F, 5 * s["NX"] * s["NY"])),
    _k("jacobi2d_macro", "stencil", "9-point box through IDX(i, j), 1-D grid, loops over the window", {"N": 4096},
       lambda s: (2 * s["N"] ** 2 * F, 9 * s["N"] ** 2)),
    _k("heat3d_zloop", "stencil", "3-D 7-point, 2-D grid marching along z (512^3)", {"NX": 512, "NY": 512, "NZ": 512},
       lambda s: (2 * s["NX"] * s["NY"] * s["NZ"] * F, 8 * s["NX"] * s["NY"] * s["NZ"])),
    _k("laplace3d", "stencil", "3-D 7-point, 3-D grid, indexing macro (512^3)", {"NX": 512, "NY": 512, "NZ": 512},
       lambda s: (2 * s["NX"] * s["NY"] * s["NZ"] * F, 8 * s["NX"] * s["NY"] * s["NZ"])),
    _k("fdtd_hz", "stencil", "FDTD magnetic update, 2-D grid", {"NXF": 4096, "NYF": 4096},
       lambda s: (4 * s["NXF"] * s["NYF"] * F, 5 * s["NXF"] * s["NYF"])),
    _k("fdtd_e", "stencil", "FDTD electric update of two fields, 1-D grid", {"NXF": 4096, "NYF": 4096},
       lambda s: (5 * s["NXF"] * s["NYF"] * F, 6 * s["NXF"] * s["NYF"])),
    _k("conv2d_3x3", "stencil", "3x3 filter in __constant__, 2-D grid, zero padding", {"W": 4096, "H": 4096},
       lambda s: (2 * s["W"] * s["H"] * F, 18 * s["W"] * s["H"])),
    _k("conv2d_5x5", "stencil", "5x5 filter in global memory, 1-D grid, valid region", {"W": 4096, "H": 4096, "R": 2},
       lambda s: (2 * s["W"] * s["H"] * F, 50 * s["W"] * s["H"])),
    # reductions and scans
    _k("reduce_atomic", "reduction", "sum of squares, one atomicAdd per element", {"N": 1 << 24},
       lambda s: (s["N"] * F, 2 * s["N"]), vendor="sumsq"),
    _k("reduce_max_blocks", "reduction", "grid-stride max into a local, interleaved (modulo) shared tree",
       {"N": 1 << 25, "THREADS": 512, "BLOCKS": 1024}, lambda s: (s["N"] * F, s["N"]), vendor="max"),
    _k("row_sums", "reduction", "one thread per row, accumulating in global memory (4096 threads)", {"ROWS": 4096, "COLS": 4096},
       lambda s: ((s["ROWS"] * s["COLS"] + s["ROWS"]) * F, s["ROWS"] * s["COLS"]), vendor="row_sums"),
    _k("scan_blocks", "scan", "inclusive Hillis-Steele per 1024-element block", {"N": 1 << 24, "B": 1024},
       lambda s: (2 * s["N"] * F, s["N"]), vendor="scan_blocks"),
    _k("scan_rows", "scan", "exclusive, one thread per row (8192 threads)", {"ROWS": 8192, "COLS": 2048},
       lambda s: (2 * s["ROWS"] * s["COLS"] * F, s["ROWS"] * s["COLS"]), vendor="scan_rows"),
    # histograms
    _k("histo_global", "histogram", "256 bins, grid-stride loop, global atomics", {"N": 1 << 25, "BINS": 256},
       lambda s: (s["N"] * F, s["N"]), vendor="histogram"),
    _k("histo_shared", "histogram", "64 bins of bytes, privatized in shared memory", {"N": 1 << 26, "NBINS": 64},
       lambda s: (float(s["N"]), 0.0), vendor="bincount",
       fixes={"params.data": {"fill": "uniform", "low": 0.0, "high": 255.0}},
       why_fixed="data[i] % NBINS subscripts a shared array, so data is taken for an index array with no bound"),
    # transposes
    _k("transpose_2d", "transpose", "2-D grid, coalesced reads, strided writes", {"ROWS": 8192, "COLS": 8192},
       lambda s: (2 * s["ROWS"] * s["COLS"] * F, 0.0), vendor="transpose"),
    _k("transpose_gather", "transpose", "1-D grid through macros, coalesced writes, strided reads", {"N": 8192},
       lambda s: (2 * s["N"] ** 2 * F, 0.0), vendor="transpose",
       fixes={"params.out": {"role": "out"}}, why_fixed="out is written through the macro OUT(r, c): the role analysis reads it as an input"),
    # n-body
    _k("nbody_aos", "nbody", "float4 array of structures, rsqrtf", {"NBODIES": 32768},
       lambda s: (2 * s["NBODIES"] * 16.0, 20 * s["NBODIES"] ** 2), cost=2),
    _k("nbody_soa", "nbody", "separate x/y/z/m arrays, sqrtf and a division, self term skipped", {"NB": 32768},
       lambda s: (5 * s["NB"] * F, 12 * s["NB"] ** 2), cost=2),
    # SpMV
    _k("spmv_csr", "spmv", "CSR, one thread per row", {"NROWS": 1 << 20, "NNZ_PER_ROW": 32},
       lambda s: ((s["NROWS"] * s["NNZ_PER_ROW"] * 2 + 3 * s["NROWS"]) * F, 2 * s["NROWS"] * s["NNZ_PER_ROW"]),
       vendor="spmv_csr", capture=True),
    _k("spmv_ell", "spmv", "ELLPACK, column-major slots, one thread per row", {"NR": 1 << 20, "SLOTS": 32},
       lambda s: ((s["NR"] * s["SLOTS"] * 2 + 2 * s["NR"]) * F, 2 * s["NR"] * s["SLOTS"]), vendor="spmv_ell",
       fixes={"params.idx": {"fill": "index", "low": 0.0, "high": float(1 << 20)}},
       why_fixed="idx holds column numbers read into a local before subscripting x: not recognized as an index array",
       capture=True),  # the app's banded columns (r + [0, 4096)), not uniform ones: the gather's locality is the data's
)

BY_NAME = {k.name: k for k in ZOO}


def work_of(k: ZooKernel) -> tuple[float, float]:
    b, f = k.work(k.sizes)
    return float(b), float(f)


def parts(n: int) -> list[list[ZooKernel]]:
    """The zoo split into n parts of about equal cost (greedy, heaviest first); each part keeps the catalog's order."""
    load = [0] * n
    members: list[list[str]] = [[] for _ in range(n)]
    for k in sorted(ZOO, key=lambda k: -k.cost):
        i = load.index(min(load))
        load[i] += k.cost
        members[i].append(k.name)
    return [[k for k in ZOO if k.name in m] for m in members]
