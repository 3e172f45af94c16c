"""The passes derived from the kernel model on the GPU: each one's pipelines against the naive original, per kernel shape.

    python bench/gpu_model_passes.py --dry --work /tmp/gmp               # here: write the MEPs, apply every pipeline, nvcc-build all
    python bench/gpu_model_passes.py --out DIR [--work /tmp/gmp]         # GPU: the same, then verify and time every variant

The kernels are our own, in the shapes real dense codes use (alpha/beta scaling with accumulation in global memory, a
transposed operand, a symmetric rank-k update, a triangular covariance-like kernel with one thread per column,
matrix-vector products with one thread per row or per column), at sizes where the naive launch is the problem.
Every variant is built in parallel, then checked against the original on several input sets and timed alternately
with it (the MEP harness); the model's view (threads against the device, intensity) is recorded beside each result.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import commit, write_result  # noqa: E402

from s2s.mep.manifest import LaunchSpec, Manifest, ParamSpec, save  # noqa: E402

N = 1024  # contractions: 2 GFLOP each, about a millisecond naive
V = 4096  # matrix-vector: a 64 MB matrix


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    params: list[ParamSpec]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    pipelines: tuple[str, ...]
    flops: float
    bytes: float


def _buf(name: str, role: str, count: int) -> ParamSpec:
    return ParamSpec(name, ("const float *" if role == "in" else "float *"), role, "float", count=count)


def _int(name: str, value: int) -> ParamSpec:
    return ParamSpec(name, "int", "scalar", "int", value=value)


def _flt(name: str, value: float) -> ParamSpec:
    return ParamSpec(name, "float", "scalar", "float", value=value)


TILING = ("contraction-tiling{tile=32 rows=4}", "contraction-tiling{tile=64 rows=8}", "contraction-tiling{tile=16 rows=1}",
          "contraction-tiling{tile=32 rows=8}", "register-accumulation")
G2 = ((N + 15) // 16, (N + 15) // 16, 1)
CASES = (
    Case("gemm_scaled", """\
__global__ void gemm_scaled(int ni, int nj, int nk, float alpha, float beta, const float* a, const float* b, float* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < ni && j < nj) {
        c[i * nj + j] *= beta;
        for (int k = 0; k < nk; k++)
            c[i * nj + j] += alpha * a[i * nk + k] * b[k * nj + j];
    }
}
""", [_int("ni", N), _int("nj", N), _int("nk", N), _flt("alpha", 1.5), _flt("beta", 0.5), _buf("a", "in", N * N),
      _buf("b", "in", N * N), _buf("c", "inout", N * N)], G2, (16, 16, 1), TILING, 2.0 * N ** 3, 4.0 * 4 * N * N),
    Case("syrk_t", """\
__global__ void syrk_t(int n, int m, float alpha, float beta, const float* a, float* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) return;
    c[i * n + j] *= beta;
    for (int k = 0; k < m; ++k)
        c[i * n + j] += alpha * a[i * m + k] * a[j * m + k];
}
""", [_int("n", N), _int("m", N), _flt("alpha", 1.5), _flt("beta", 0.5), _buf("a", "in", N * N), _buf("c", "inout", N * N)],
         G2, (16, 16, 1), TILING, 2.0 * N ** 3, 4.0 * 3 * N * N),
    Case("gemm_atb", """\
__global__ void gemm_atb(int ni, int nj, int nk, const float* a, const float* b, float* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < ni && j < nj) {
        float s = 0.0f;
        for (int k = 0; k < nk; ++k)
            s += a[k * ni + i] * b[k * nj + j];
        c[i * nj + j] = s;
    }
}
""", [_int("ni", N), _int("nj", N), _int("nk", N), _buf("a", "in", N * N), _buf("b", "in", N * N), _buf("c", "out", N * N)],
         G2, (16, 16, 1), TILING, 2.0 * N ** 3, 4.0 * 3 * N * N),
    Case("gram_triangular", """\
__global__ void gram_triangular(int m, int n, const float* data, float* sym)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x;
    if (j1 < m) {
        for (int j2 = j1; j2 < m; j2++) {
            sym[j1 * m + j2] = 0.0f;
            for (int i = 0; i < n; i++)
                sym[j1 * m + j2] += data[i * m + j1] * data[i * m + j2];
            sym[j2 * m + j1] = sym[j1 * m + j2];
        }
    }
}
""", [_int("m", N), _int("n", N), _buf("data", "in", N * N), _buf("sym", "out", N * N)], ((N + 255) // 256, 1, 1), (256, 1, 1),
         ("inner-loop-threads", "inner-loop-threads,contraction-tiling{tile=32 rows=4}",
          "inner-loop-threads{block=16x16},contraction-tiling{tile=64 rows=8}", "inner-loop-threads,contraction-tiling{tile=16 rows=1}"),
         1.0 * N ** 3, 4.0 * 2 * N * N),
    Case("gemv_rows", """\
__global__ void gemv_rows(int n, const float* a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = 0.0f;
        for (int j = 0; j < n; j++)
            y[i] += a[i * n + j] * x[j];
    }
}
""", [_int("n", V), _buf("a", "in", V * V), _buf("x", "in", V), _buf("y", "out", V)], ((V + 255) // 256, 1, 1), (256, 1, 1),
         ("split-reduction", "split-reduction{block=128}", "split-reduction{mode=splits splits=16}", "warp-rows"), 2.0 * V * V, 4.0 * V * V),
    Case("gemv_cols", """\
__global__ void gemv_cols(int m, int n, float alpha, float beta, const float* a, const float* x, float* y)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) {
        y[j] = beta * y[j];
        for (int i = 0; i < m; i++)
            y[j] += alpha * a[i * n + j] * x[i];
    }
}
""", [_int("m", V), _int("n", V), _flt("alpha", 1.5), _flt("beta", 0.5), _buf("a", "in", V * V), _buf("x", "in", V),
      _buf("y", "inout", V)], ((V + 255) // 256, 1, 1), (256, 1, 1),
         ("split-reduction", "split-reduction{splits=16}", "split-reduction{splits=32}"), 3.0 * V * V, 4.0 * V * V),
)


def make(case: Case, work: Path) -> Path:
    mep = work / case.name
    mep.mkdir(parents=True, exist_ok=True)
    (mep / "kernel.cu").write_text(case.source)
    save(Manifest(kernel=case.name, backend="cuda", kernel_file="kernel.cu", origin={"file": "bench/gpu_model_passes.py"},
                  params=case.params, launch=LaunchSpec(grid=case.grid, block=case.block), repetitions=20, warmup=3, timeout_s=120.0), mep)
    return mep


def variants(case: Case, mep: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(pipeline, variant id or "", what the model says) for every pipeline; refused ones carry the reason."""
    from s2s.lang.kernel_facts import kernel_facts
    from s2s.lang.kernel_model import kernel_model, parallelism
    from s2s.mep.manifest import load
    from s2s.optimize.candidate import Candidate
    from s2s.optimize.cost import predict
    from s2s.optimize.loop import write_variant
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import apply_pipeline

    m = load(mep)
    src = case.source.encode()
    state = State(manifest=m, original=src, kernel=case.name, dialect="cuda", facts=kernel_facts(src, "cuda", case.name))
    out = []
    for pipe in case.pipelines:
        cand = apply_pipeline(pipe, state)
        if not isinstance(cand, Candidate):
            out.append((pipe, "", {"refused": cand}))
            continue
        write_variant(mep, "kernel.cu", cand)
        launch = cand.launch or state.base_launch
        model = kernel_model(cand.source, "cuda", case.name)
        par = parallelism(launch.grid, launch.block)  # type: ignore[arg-type]
        pred = predict(cand.source, "cuda", case.name, launch.grid, launch.block, _scalars(case))  # type: ignore[arg-type]
        out.append((pipe, cand.id, {"grid": list(launch.grid), "block": list(launch.block), "fill": round(par.fill, 4),
                                    "intensity": round(model.intensity, 3) if model else None,
                                    "predicted_us": round(pred.seconds * 1e6, 2) if pred else None, "predicted_bound": pred.bound if pred else None}))
    return out


def _scalars(case: Case) -> dict[str, float]:
    return {p.name: float(p.value) for p in case.params if p.role == "scalar"}  # type: ignore[arg-type]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--work", type=Path, default=Path("/tmp/gmp"))
    ap.add_argument("--dry", action="store_true", help="build only (no GPU here)")
    ap.add_argument("--only", default="")
    ap.add_argument("--deadline", type=float, default=480.0)
    args = ap.parse_args()
    from s2s.lang.kernel_model import kernel_model, parallelism
    from s2s.mep.evaluate import build_many, run_built
    from s2s.optimize.cost import predict

    t0 = time.time()
    cases = [c for c in CASES if not args.only or c.name in args.only.split(",")]
    plans = {}
    for c in cases:
        mep = make(c, args.work)
        model = kernel_model(c.source.encode(), "cuda", c.name)
        par = parallelism(c.grid, c.block)
        pred = predict(c.source.encode(), "cuda", c.name, c.grid, c.block, _scalars(c))
        plans[c.name] = (c, mep, variants(c, mep), {"fill": round(par.fill, 4), "intensity": round(model.intensity, 3) if model else None,
                                                     "predicted_us": round(pred.seconds * 1e6, 2) if pred else None})
    with ThreadPoolExecutor(max_workers=len(plans) or 1) as pool:
        jobs = max(2, (os.cpu_count() or 2) // max(len(plans), 1))
        builds = dict(zip(plans, pool.map(lambda p: build_many(p[1], [None, *[v for _, v, _ in p[2] if v]], jobs=jobs),
                                          plans.values())))
    rows: list[dict[str, Any]] = []
    for name, (c, _mep, vs, orig) in plans.items():
        by_id = {b.variant: b for b in builds[name]}
        for pipe, vid, info in vs:
            row: dict[str, Any] = {"kernel": name, "pipeline": pipe, "original_fill": orig["fill"], "original_intensity": orig["intensity"],
                                   "original_predicted_us": orig["predicted_us"], **info}
            if info.get("predicted_us") and orig["predicted_us"]:
                row["predicted_speedup"] = round(orig["predicted_us"] / info["predicted_us"], 2)
            b = by_id.get(vid) if vid else None
            if b is not None:
                row["built"] = b.ok
                if not b.ok:
                    row["build_log"] = (b.log or "; ".join(b.messages))[-1500:]
                elif not args.dry and time.time() - t0 < args.deadline:
                    m = run_built(b)
                    row.update(verdict=m.verdict, speedup=m.speedup, device=m.device,
                               original_us=m.ref.median_us if m.ref else None, variant_us=m.var.median_us if m.var else None,
                               messages=list(m.messages)[:3])
                    if m.ref and m.ref.median_us:
                        row["original_gflops"] = round(c.flops / m.ref.median_us / 1e3, 1)
                    if m.var and m.var.median_us:
                        row["variant_gflops"] = round(c.flops / m.var.median_us / 1e3, 1)
            rows.append(row)
            print(json.dumps({k: row.get(k) for k in ("kernel", "pipeline", "built", "verdict", "speedup", "refused")}), flush=True)
    device = next((r["device"] for r in rows if r.get("device")), "none (dry run)" if args.dry else "")
    doc = {"commit": commit(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": device, "rows": rows}
    md = [f"# Model-derived passes on {device}", "", f"commit {doc['commit']}, {doc['date']}; sizes: contractions {N}^3, matrix-vector {V}^2", "",
          "| kernel | pipeline | fill before | verdict | speedup | predicted | GFLOP/s before -> after |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        verdict = r.get("verdict") or ("refused: " + r["refused"] if r.get("refused") else ("built" if r.get("built") else "build failed"))
        sp = f"{r['speedup']:.2f}x" if r.get("speedup") else ""
        gf = f"{r.get('original_gflops', '')} -> {r.get('variant_gflops', '')}" if r.get("variant_gflops") else ""
        pr = f"{r['predicted_speedup']:.2f}x" if r.get("predicted_speedup") else ""
        md.append(f"| {r['kernel']} | `{r['pipeline']}` | {r['original_fill']} | {verdict} | {sp} | {pr} | {gf} |")
    pairs = [(r["predicted_speedup"], r["speedup"]) for r in rows if r.get("predicted_speedup") and r.get("speedup") and r.get("verdict") == "ok"]
    if len(pairs) >= 3:  # how well the cost model ranks: Spearman's rho over the verified variants
        rp, rm = _ranks([p for p, _ in pairs]), _ranks([m for _, m in pairs])
        n = len(pairs)
        rho = 1 - 6 * sum((a - b) ** 2 for a, b in zip(rp, rm)) / (n * (n * n - 1))
        doc["cost_model_spearman"] = round(rho, 3)
        md += ["", f"Cost model: Spearman rank correlation of predicted and measured speedups over {n} verified variants: {rho:.2f}"]
    write_result(args.out, "gpu_model_passes" + ("_dry" if args.dry else ""), doc, "\n".join(md))
    print("\n".join(md))
    return 0 if all(r.get("built", True) for r in rows) else 1


def _ranks(xs: list[float]) -> list[int]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0] * len(xs)
    for r, i in enumerate(order):
        out[i] = r
    return out


if __name__ == "__main__":
    raise SystemExit(main())
