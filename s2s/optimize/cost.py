"""A cost model from the kernel model: roofline bounds scaled by how much of the device the launch fills.

For a kernel text and its launch (grid in blocks, block in threads) with the MEP's scalar values, the model's accesses
are counted per thread (each multiplied by the trip counts of its loops), then over the launch:
  - compute: the floating-point operations of the deepest loop body at the device's FP32 rate;
  - DRAM: global bytes, unit-stride accesses once, accesses uniform across a warp once per warp, strided ones a sector
    (32 bytes) per element; an access that every thread along a block dimension shares is read once per block row;
  - L1: the same bytes before that sharing, at the caches' rate (what a naive product really waits on).
Each bound is divided by the fraction of the device the launch keeps busy (`parallelism`). Shared-memory accesses
cost nothing here: tiling shows up as global loads that run once per tile. Absolute times are rough; the model is
for ordering candidates; `record` keeps every candidate's prediction in the history beside its measurement, and the
report (s2s.optimize.report_data.model_accuracy) says how well the model ranked them.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from s2s.lang.affine import Poly
from s2s.lang.kernel_model import ArrayAccess, Device, KernelModel, kernel_model, parallelism
from s2s.mep.roofline import compulsory_bytes
from s2s.optimize.candidate import Candidate
from s2s.optimize.proposers.base import State

L1_BYTES_PER_S = 3.3e13  # 132 SMs x 128 B/clock x ~1.98 GHz (H200)
SECTOR = 32
H200 = Device()


@dataclass(frozen=True)
class Prediction:
    seconds: float
    bound: str  # compute | dram | l1
    flops: float
    dram_bytes: float
    l1_bytes: float
    fill: float


def predict(source: bytes, dialect: str, kernel: str | None, grid: tuple[int, int, int], block: tuple[int, int, int],
            scalars: dict[str, float], device: Device = H200) -> Prediction | None:
    """The predicted time of one launch, None when there is no kernel, a loop's trip count or the block size is unknown."""
    return _predict(source, dialect, kernel, tuple(grid), tuple(block), tuple(sorted(scalars.items())), device)  # type: ignore[arg-type]


@lru_cache(maxsize=256)  # the loop records what the builtin proposer has just ranked: the same texts, parsed once
def _predict(source: bytes, dialect: str, kernel: str | None, grid: tuple[int, int, int], block: tuple[int, int, int],
             scalar_items: tuple[tuple[str, float], ...], device: Device) -> Prediction | None:
    if min(block) <= 0:  # an OpenCL launch with a NULL local size: the runtime picks it, the model cannot
        return None
    scalars = dict(scalar_items)
    model = kernel_model(source, dialect, kernel)
    if model is None:
        return None
    if dialect == "opencl":  # OpenCL sizes are work-items
        grid = (-(-grid[0] // max(block[0], 1)), -(-grid[1] // max(block[1], 1)), -(-grid[2] // max(block[2], 1)))
    values = {**scalars, **{f"blockDim.{a}": float(b) for a, b in zip("xyz", block)},
              **{f"gridDim.{a}": float(g) for a, g in zip("xyz", grid)}}
    threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
    for g in model.guards:  # a thread variable at the middle of the range its guard lets through
        for var, ub in g.upper:
            top = _value(ub, values)
            if any(m.var == var for m in model.mapping) and top is not None:
                values.setdefault(var, top / 2)
    for m in model.mapping:  # thread-local indices (tx = threadIdx.x) and unguarded ones at their first value
        values.setdefault(m.var, 0.0)
    strided = _grid_strided(source, model)
    if strided:  # a grid-stride loop runs its range over all the launch's threads
        values[GRID_THREADS] = float(threads)
    dram = l1 = 0.0
    for a in model.accesses:
        if not model.pointer(a.array):
            continue  # shared memory and locals
        runs = _runs(model, a.nest, values, strided)
        if runs is None:
            return None
        per_lane = {"coalesced": 1.0, "uniform": 1.0 / 32}.get(a.pattern, SECTOR / a.element_bytes)
        shared = 1.0
        for axis in a.shared_by(("x", "y")):
            shared *= block["xy".index(axis)]
        l1 += threads * runs * a.element_bytes * per_lane
        dram += threads * runs * a.element_bytes * per_lane / shared
    deepest = max(range(len(model.loops)), key=lambda i: model.loops[i].depth, default=-1)  # the first deepest, as model.flops
    flop_runs = _runs(model, _nest(model, deepest), values, strided)
    flops = threads * model.flops * (flop_runs or 0.0)
    fill = max(parallelism(grid, block, device).fill, 1.0 / device.sms)
    bounds = {"compute": flops / device.flops, "dram": dram / device.bandwidth, "l1": l1 / L1_BYTES_PER_S}
    which = max(bounds, key=lambda k: bounds[k])
    return Prediction(bounds[which] / fill, which, flops, dram, l1, fill)


def _nest(model: KernelModel, i: int) -> tuple[int, ...]:
    """Loop i and the loops around it, outermost first (indices into model.loops)."""
    out: list[int] = []
    while i >= 0:
        out.insert(0, i)
        i = model.loops[i].parent
    return tuple(out)


GRID_THREADS = "s2s.grid_threads"  # the launch's thread count, in the values a grid-stride loop is evaluated with
_GRID_STEP = re.compile(r"\+=\s*\(?\s*(?:blockDim\.x\s*\*\s*gridDim\.x|gridDim\.x\s*\*\s*blockDim\.x|get_global_size\s*\(\s*0\s*\))\s*\)?\s*$")


def _grid_strided(source: bytes, model: KernelModel) -> frozenset[int]:
    """The loops stepping by the launch's thread count (`i += blockDim.x * gridDim.x`): a thread runs 1/threads of
    their range, not all of it, and not once (what a step the model cannot read as a number otherwise means)."""
    out = set()
    for i, lp in enumerate(model.loops):
        head = source[lp.start:lp.end].decode("utf-8", "replace")
        depth, end = 0, -1
        for j, ch in enumerate(head):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if ch == ")" and depth == 0:
                end = j
                break
        if lp.step is None and end > 0 and _GRID_STEP.search(head[:end].rsplit(";", 1)[-1]):
            out.add(i)
    return frozenset(out)


def _runs(model: KernelModel, loops: tuple[int, ...], values: dict[str, float], strided: frozenset[int] = frozenset()) -> float | None:
    """How often a statement inside `loops` runs per thread: the product of the trip counts, an inner count that
    depends on an outer variable (a triangular nest) taken at the outer loop's middle; a grid-stride loop's range
    shared by all the launch's threads."""
    runs, bound = 1.0, dict(values)
    for i in loops:
        lp = model.loops[i]
        if i in strided and lp.upper is not None:
            lo = _value(lp.lower, bound) if lp.lower is not None else 0.0
            hi = _value(lp.upper, bound)
            if lo is None or hi is None:
                return None
            runs *= max(0.0, (hi - lo) / max(values.get(GRID_THREADS, 1.0), 1.0))
            continue
        if lp.upper is None or not lp.step:  # a shuffle tree (off /= 2), a data-dependent bound: counted once
            continue
        # a start that is not affine (lane = threadIdx.x % 32) is taken as 0: it shifts the range, not its length
        lo = _value(lp.lower, bound) if lp.lower is not None else 0.0
        hi = _value(lp.upper, bound)
        if lo is None or hi is None:
            return None
        runs *= max(0.0, (hi - lo) / lp.step)
        bound[lp.var] = (lo + hi) / 2
    return runs


def _value(p: Poly, values: dict[str, float]) -> float | None:
    total = 0.0
    for mono, c in p.terms:
        term = float(c)
        for name in mono:
            if name not in values and not name.startswith(("threadIdx", "blockIdx")):
                return None
            term *= values.get(name, 0.0)  # thread and block indices at their first value
        total += term
    return total


def rank(predictions: dict[str, Prediction | None]) -> list[str]:
    """Candidate ids, the ones predicted fastest first; those without a prediction last, in the order given."""
    known = sorted((p.seconds, i, k) for i, (k, p) in enumerate(predictions.items()) if p is not None)
    return [k for _, _, k in known] + [k for k, p in predictions.items() if p is None]


__all__ = ["Prediction", "predict", "predict_candidate", "rank", "order", "record", "original_prediction", "ArrayAccess"]


def _scalars(state: State) -> dict[str, float]:
    return {p.name: float(p.value) for p in state.manifest.params
            if p.role == "scalar" and isinstance(p.value, (int, float)) and not isinstance(p.value, bool)}


BLIND = 0.25  # a candidate predicted to move less than this share of the bytes it must move uses accesses the model misses


def predict_candidate(c: Candidate | None, state: State) -> Prediction | None:
    """The model's time for one launch of candidate `c` (None: the original) with the MEP's scalars."""
    launch = (c.launch if c is not None else None) or state.base_launch
    return predict(c.source if c is not None else state.original, state.dialect, state.kernel, launch.grid, launch.block,
                   _scalars(state))


def _plausible(p: Prediction | None, need: float | None) -> Prediction | None:
    """p, or None when it moves under a quarter of the bytes the launch must move: its loads are ones the model cannot
    read (float4 words through reinterpret_cast, shared tiles filled in a loop without an induction declaration), and
    a time from the rest would rank it first for no reason."""
    return None if p is not None and need and p.dram_bytes < BLIND * need else p


def order(candidates: list[Candidate], state: State) -> list[Candidate]:
    """The candidates fastest-predicted first (stable; those without a plausible prediction keep their place after the rest).
    Only for GPU dialects: the model's numbers are a GPU's, not a CPU's running OpenCL. Unchanged when the original
    itself has no prediction (a trip count the MEP's scalars do not give)."""
    if state.dialect == "opencl" or len(candidates) < 2:
        return candidates
    base = predict_candidate(None, state)
    if base is None:
        return candidates
    need = min(compulsory_bytes(state.manifest) or base.dram_bytes, base.dram_bytes)  # the original's own, where less
    timed = {str(i): predict_candidate(c, state) for i, c in enumerate(candidates)}
    ranked = [candidates[int(k)] for k in rank({k: _plausible(p, need) for k, p in timed.items()})]
    first = [c for c in ranked if _register_blocked(c, state, timed[str(candidates.index(c))])]
    return first + [c for c in ranked if c not in first]


BLOCKED_PASS, BLOCKED_TILE = "contraction-blocking", 128


def _register_blocked(c: Candidate, state: State, p: Prediction | None) -> bool:
    """A 128x128 register-blocked contraction (contraction-blocking) whose launch fills every SM with at least one tile
    and whose outputs each sum at least 128 terms: what the model cannot see makes it the likely winner, so it goes
    first. The model counts shared memory as free and reads its float4 loads, whose thread mapping is not affine,
    as strided; it does not credit the 64 independent accumulators per thread that hide latency where few threads
    run. (The fastest form of a hand-written SGEMM; bench/gpu_gemm_forms.py measures it against the others.)"""
    steps = c.origin.split("+repair")[0].removeprefix("pass:").split(",")
    if not c.origin.startswith("pass:") or not steps[-1].startswith(BLOCKED_PASS) or c.launch is None or p is None:
        return False
    blocks = c.launch.grid[0] * c.launch.grid[1] * c.launch.grid[2]
    outputs = blocks * BLOCKED_TILE * BLOCKED_TILE
    return blocks >= H200.sms and p.flops >= 2.0 * 128 * outputs


ORIGINAL_KEY = "cost_model"  # history meta: the model's prediction for the original, {predicted_us, ...}


def detail(p: Prediction, device: Device = H200) -> dict[str, object]:
    """A prediction as stored beside a candidate (history column `prediction`)."""
    return {"bound": p.bound, "flops": p.flops, "dram_bytes": p.dram_bytes, "l1_bytes": p.l1_bytes, "fill": p.fill,
            "device": device.name}


def record(history: Any, state: State, candidates: list[Candidate]) -> None:
    """Record the model's predicted time of each candidate as it is proposed (history columns `predicted_us`,
    `prediction`), and once per MEP the original's (meta `cost_model`), so the report can judge how well the model
    ranks against the measurements. Every dialect is recorded, OpenCL too: the prediction is always for the model's
    device (an H200), and the report says which device measured. A kernel the model cannot read records nothing."""
    if history.meta(ORIGINAL_KEY) is None:
        base = _safe(None, state)
        history.set_meta(ORIGINAL_KEY, json.dumps({"predicted_us": base.seconds * 1e6 if base else None,
                                                   **(detail(base) if base else {"device": H200.name})}))
    for c in candidates:
        p = _safe(c, state)
        if p is not None:
            history.set_prediction(c.id, p.seconds, detail(p))


def _safe(c: Candidate | None, state: State) -> Prediction | None:
    try:
        return predict_candidate(c, state)
    except Exception:  # noqa: BLE001 - a model failure never stops the loop; the candidate goes unpredicted
        return None


def original_prediction(history: Any) -> float | None:
    """The original's predicted µs recorded in a History (meta `cost_model`), None when absent."""
    try:
        v = json.loads(history.meta(ORIGINAL_KEY) or "null")
    except ValueError:
        return None
    us = v.get("predicted_us") if isinstance(v, dict) else None
    return float(us) if isinstance(us, (int, float)) and us > 0 else None
