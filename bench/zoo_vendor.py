"""The vendor library doing a zoo kernel's job (cuBLAS, cuSPARSE, CUB through CuPy), timed like the harness times
kernels: CUDA events around each call, L2 flushed between calls, median of the repetitions. FP32 throughout, TF32 off
(CUPY_TF32=0, CuPy's default). Also the device's copy bandwidth (cudaMemcpy device to device, bytes read + written).

Runs on the GPU machine (needs CuPy); `python bench/zoo_vendor.py` prints every entry's time.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("CUPY_TF32", "0")

Op = tuple[str, Callable[[], Any]]


def _rand(cp: Any, *shape: int) -> Any:
    return cp.random.default_rng(1).random(shape, dtype=cp.float32) * 2 - 1


def _table(cp: Any, cublas: Any, sparse: Any, solve_triangular: Any) -> dict[str, Callable[[dict[str, int]], Op]]:
    """Each vendor key -> a function of the kernel's sizes giving (library, call); the modules are passed in (CuPy's)."""

    def dot(s: dict[str, int]) -> Op:
        x, y = _rand(cp, s["N"]), _rand(cp, s["N"])
        return "cublas sdot", lambda: cublas.dot(x, y)

    def axpy(s: dict[str, int]) -> Op:
        x, y = _rand(cp, s["N"]), _rand(cp, s["N"])
        return "cublas saxpy", lambda: cublas.axpy(2.5, x, y)

    def axpby(s: dict[str, int]) -> Op:
        x, y = _rand(cp, s["N"]), _rand(cp, s["N"])
        k = cp.ElementwiseKernel("float32 x, float32 a, float32 b", "float32 y", "y = a * x + b * y", "zoo_axpby")
        return "cupy elementwise (no BLAS axpby)", lambda: k(x, cp.float32(1.5), cp.float32(-0.5), y)

    def gemv(trans: str, rows: str, cols: str) -> Callable[[dict[str, int]], Op]:
        def make(s: dict[str, int]) -> Op:
            a = _rand(cp, s[rows], s[cols])
            x = _rand(cp, s[cols] if trans == "n" else s[rows])
            y = cp.zeros(s[rows] if trans == "n" else s[cols], dtype=cp.float32)
            return f"cublas sgemv ({trans})", lambda: cublas.gemv(trans.upper(), 1.0, a, x, 0.0, y)
        return make

    def ger(s: dict[str, int]) -> Op:
        a, x, y = _rand(cp, s["N"], s["N"]), _rand(cp, s["N"]), _rand(cp, s["N"])
        return "cublas sger", lambda: cublas.ger(0.5, x, y, a)

    def gemm(ta: str, tb: str, m: str, k: str, n: str, beta: float = 0.0) -> Callable[[dict[str, int]], Op]:
        def make(s: dict[str, int]) -> Op:
            a = _rand(cp, s[m], s[k]) if ta == "n" else _rand(cp, s[k], s[m])
            b = _rand(cp, s[k], s[n])
            c = _rand(cp, s[m], s[n])
            return f"cublas sgemm ({ta}{tb})", lambda: cublas.gemm(ta.upper(), tb.upper(), a, b, out=c, alpha=1.5, beta=beta)
        return make

    def syrk(trans: str, n: str, k: str) -> Callable[[dict[str, int]], Op]:
        def make(s: dict[str, int]) -> Op:
            a = _rand(cp, s[n], s[k]) if trans == "n" else _rand(cp, s[k], s[n])
            c = _rand(cp, s[n], s[n])
            return f"cublas ssyrk ({trans})", lambda: cublas.syrk(trans.upper(), a, out=c, alpha=0.5, beta=2.0)
        return make

    def syr2k(s: dict[str, int]) -> Op:
        a, b, c = _rand(cp, s["N"], s["M"]), _rand(cp, s["N"], s["M"]), _rand(cp, s["N"], s["N"])

        def run() -> None:
            cublas.gemm("N", "T", a, b, out=c, alpha=0.5, beta=1.5)
            cublas.gemm("N", "T", b, a, out=c, alpha=0.5, beta=1.0)
        return "2x cublas sgemm (CuPy has no syr2k)", run

    def trsm(s: dict[str, int]) -> Op:
        lo = cp.tril(_rand(cp, s["N"], s["N"]) * 0.01) + cp.eye(s["N"], dtype=cp.float32) * 2
        b = _rand(cp, s["N"], s["NRHS"])
        return "cublas strsm (cupyx solve_triangular)", lambda: solve_triangular(lo, b, lower=True, overwrite_b=True)

    def covar(s: dict[str, int]) -> Op:
        d = _rand(cp, s["NROWS"], s["MCOLS"])
        c = cp.empty((s["MCOLS"], s["MCOLS"]), dtype=cp.float32)
        return "cublas ssyrk (t)", lambda: cublas.syrk("T", d, out=c, alpha=1.0 / (s["NROWS"] - 1))

    def batched(dim: str, nb: str, vec: bool) -> Callable[[dict[str, int]], Op]:
        def make(s: dict[str, int]) -> Op:
            a = _rand(cp, s[nb], s[dim], s[dim])
            b = _rand(cp, s[nb], s[dim], 1 if vec else s[dim])
            return "cupy.matmul (cublas batched)", lambda: cp.matmul(a, b)
        return make

    def sumsq(s: dict[str, int]) -> Op:
        x = _rand(cp, s["N"])
        return "cublas sdot (x, x)", lambda: cublas.dot(x, x)

    def vmax(s: dict[str, int]) -> Op:
        x = _rand(cp, s["N"])
        return "cupy.max (CUB)", lambda: cp.max(x)

    def row_sums(s: dict[str, int]) -> Op:
        a = _rand(cp, s["ROWS"], s["COLS"])
        return "cupy.sum(axis=1) (CUB segmented)", lambda: cp.sum(a, axis=1)

    def scan(rows: Callable[[dict[str, int]], int], cols: str) -> Callable[[dict[str, int]], Op]:
        def make(s: dict[str, int]) -> Op:
            a = _rand(cp, rows(s), s[cols])
            return "cupy.cumsum(axis=1)", lambda: cp.cumsum(a, axis=1)
        return make

    def histogram(s: dict[str, int]) -> Op:
        v = (_rand(cp, s["N"]) + 1) / 2
        return "cupy.histogram", lambda: cp.histogram(v, bins=s["BINS"], range=(0.0, 1.0))

    def bincount(s: dict[str, int]) -> Op:
        d = cp.random.default_rng(2).integers(0, 256, s["N"], dtype=cp.int32).astype(cp.uint8)
        return "cupy.bincount (of data % 64)", lambda: cp.bincount(d % s["NBINS"], minlength=s["NBINS"])

    def transpose(s: dict[str, int]) -> Op:
        r, c = s.get("ROWS", s.get("N", 0)), s.get("COLS", s.get("N", 0))
        a, out = _rand(cp, r, c), cp.empty((c, r), dtype=cp.float32)
        return "cublas sgeam (transpose)", lambda: cublas.geam("T", "N", 1.0, a, 0.0, out, out=out)

    def spmv(rows: str, per_row: str) -> Callable[[dict[str, int]], Op]:
        def make(s: dict[str, int]) -> Op:
            sp = sparse
            n, k = s[rows], s[per_row]
            g = cp.random.default_rng(3)
            cols = (cp.repeat(cp.arange(n), k) + g.integers(-1024, 1024, n * k)) % n
            m = sp.csr_matrix((g.random(n * k, dtype=cp.float32), cols.astype(cp.int32), cp.arange(0, n * k + 1, k, dtype=cp.int32)),
                              shape=(n, n))
            x = _rand(cp, n)
            return "cuSPARSE csrmv (cupyx)", lambda: m @ x
        return make

    return {
        "dot": dot, "axpy": axpy, "axpby": axpby,
        "gemv_n": gemv("n", "N", "N"), "gemv_t": gemv("t", "NROWS", "NCOLS"), "gemv_colmajor": gemv("n", "M", "NN"),
        "ger": ger, "gemm": gemm("n", "n", "N", "N", "N"), "gemm_scaled": gemm("n", "n", "NI", "NK", "NJ", beta=1.2),
        "gemm_tn": gemm("t", "n", "M", "K", "NJ"), "syrk": syrk("n", "N", "M"), "syrk_t": syrk("t", "N", "K"),
        "syr2k": syr2k, "trsm": trsm, "covar": covar,
        "batched_gemm8": batched("DIM", "BATCH", False), "batched_gemv16": batched("D", "NBATCH", True),
        "sumsq": sumsq, "max": vmax, "row_sums": row_sums,
        "scan_blocks": scan(lambda s: s["N"] // s["B"], "B"), "scan_rows": scan(lambda s: s["ROWS"], "COLS"),
        "histogram": histogram, "bincount": bincount, "transpose": transpose,
        "spmv_csr": spmv("NROWS", "NNZ_PER_ROW"), "spmv_ell": spmv("NR", "SLOTS"),
    }


def time_us(cp: Any, fn: Callable[[], Any], reps: int = 20, warmup: int = 3) -> dict[str, float]:
    """Median and IQR (µs) of one call, each timed alone between CUDA events after an L2 flush: a buffer of twice the L2
    written, then read (as the harness flushes: the L2 left holding clean lines, none to write back inside the call)."""
    l2 = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id).get("l2CacheSize") or (32 << 20)
    flush = cp.empty(2 * l2, dtype=cp.uint8)
    words = flush.view(cp.uint64)
    for _ in range(warmup):
        fn()
    times = []
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(reps):
        flush.fill(1)
        words.max()  # the read: evicts the filled lines' write-back before the timed call
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    times.sort()
    return {"median_us": times[len(times) // 2], "spread_us": times[(3 * len(times)) // 4] - times[len(times) // 4]}


def vendor_time(key: str, sizes: dict[str, int]) -> dict[str, Any]:
    """{library, median_us, spread_us} of the vendor call for `key`, or {error} when it cannot run here."""
    try:
        import cupy as cp
        import cupyx.scipy.sparse as sparse
        from cupy import cublas
        from cupyx.scipy.linalg import solve_triangular

        label, fn = _table(cp, cublas, sparse, solve_triangular)[key](sizes)
        t = time_us(cp, fn)
        cp.get_default_memory_pool().free_all_blocks()
        return {"library": label, **t}
    except Exception as exc:  # noqa: BLE001 - a missing library or an API difference must not stop the benchmark
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


def copy_bandwidth_gbs(nbytes: int = 1 << 30) -> dict[str, Any]:
    """The device's copy bandwidth: cudaMemcpy device to device of `nbytes`, counting bytes read plus written."""
    try:
        import cupy as cp

        src = cp.ones(nbytes // 4, dtype=cp.float32)
        dst = cp.empty_like(src)
        t = time_us(cp, lambda: cp.cuda.runtime.memcpy(dst.data.ptr, src.data.ptr, nbytes, 3))  # 3: device to device
        src = dst = None  # the 2 GiB go back before the kernels run
        cp.get_default_memory_pool().free_all_blocks()
        name = cp.cuda.runtime.getDeviceProperties(0)["name"]
        return {"device": name.decode() if isinstance(name, bytes) else str(name), "bytes": nbytes,
                "gbs": 2 * nbytes / (t["median_us"] * 1e3), **t}
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


if __name__ == "__main__":
    import json
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    from zoo_catalog import ZOO

    print(json.dumps({"copy": copy_bandwidth_gbs()}))
    for k in ZOO:
        if k.vendor:
            print(json.dumps({"kernel": k.name, **vendor_time(k.vendor, k.sizes)}))
