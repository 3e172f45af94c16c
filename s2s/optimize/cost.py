"""A cost model from the kernel model: roofline bounds scaled by how much of the device the launch fills.

For a kernel text and its launch (grid in blocks, block in threads) with the MEP's scalar values, the model's accesses
are counted per thread (each multiplied by the trip counts of its loops), then over the launch:
  - compute: the floating-point operations of the deepest loop body at the device's FP32 rate;
  - DRAM: global bytes, unit-stride accesses once, accesses uniform across a warp once per warp, strided ones a sector
    (32 bytes) per element; an access that every thread along a block dimension shares is read once per block row;
  - L1: the same bytes before that sharing, at the caches' rate (what a naive product really waits on), plus every
    shared-memory access: on NVIDIA GPUs shared memory and L1 are the same SRAM at the same rate, a warp-uniform
    shared read a broadcast (1/32 of a lane's bytes), any other one per lane.
Stencil neighbours reach DRAM once: the reads of one array whose indices differ only by a parameter offset
(`u[c - NX]`, `u[c + NX*NY]`) or by a short constant window loop moving with a thread index (`img[(y+dy)*W + x+dx]`,
dy in [-1, 1]) come from L1/L2 after the first, so DRAM counts one of them, L1 all of them (the original of a
stencil is not charged nine loads for what shared tiling then "saves").
The L1's rate is in wavefronts, one 128-byte line per SM per clock, not in lanes' bytes: a warp's global read costs one
wavefront per line it touches (`_wavefronts`): a warp-uniform read a whole one (a filter coefficient `k[i*5+j]` read
by every thread is one L1 request per warp, as costly as a coalesced row), a unit-stride read one per 128 bytes, plus
one where it starts off a line (a neighbour at x - 1 touches two lines). A 5x5 convolution with the filter in global memory is then bound by its 70
wavefronts per warp of outputs (predicted 142 us, measured 137 us on the H200), and a register window that loads
(F + 4) x 5 points and the 25 coefficients once per F outputs (stencil-registers) by far fewer. A read inside
`if (!flag) { ... flag = true; }` runs once per thread, whatever loops are around that block (`_once`).
Each bound is divided by the fraction of the device the launch keeps busy (`parallelism`). Absolute times are rough;
the model is for ordering candidates; `record` keeps every candidate's prediction in the history beside its
measurement, and the report (s2s.optimize.report_data.model_accuracy) says how well the model ranked them. `order`
also reads the original's Nsight Compute profile where the loop has one (`profiled`).
"""
from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from tree_sitter import Node

from s2s.lang.affine import Poly
from s2s.lang.kernel_facts import find_kernel
from s2s.lang.kernel_model import ArrayAccess, KernelModel, kernel_model, parallelism
from s2s.lang.parsing import descendants, parse, src
from s2s.lang.target_device import H200, TargetDevice
from s2s.mep.roofline import compulsory_bytes
from s2s.optimize.candidate import Candidate
from s2s.optimize.proposers.base import State

FLOOR = "floor"
SECTOR = 32


@dataclass(frozen=True)
class Prediction:
    seconds: float
    bound: str  # compute | dram | l1 | floor (the compulsory bytes at full bandwidth: the model counted less)
    flops: float
    dram_bytes: float
    l1_bytes: float
    fill: float


def predict(source: bytes, dialect: str, kernel: str | None, grid: tuple[int, int, int], block: tuple[int, int, int],
            scalars: dict[str, float], device: TargetDevice = H200) -> Prediction | None:
    """The predicted time of one launch, None when there is no kernel, a loop's trip count or the block size is unknown."""
    return _predict(source, dialect, kernel, tuple(grid), tuple(block), tuple(sorted(scalars.items())), device)  # type: ignore[arg-type]


@lru_cache(maxsize=256)  # the loop records what the builtin proposer has just ranked: the same texts, parsed once
def _predict(source: bytes, dialect: str, kernel: str | None, grid: tuple[int, int, int], block: tuple[int, int, int],
             scalar_items: tuple[tuple[str, float], ...], device: TargetDevice) -> Prediction | None:
    if min(block) <= 0:  # an OpenCL launch with a NULL local size: the runtime picks it, the model cannot
        return None
    scalars = dict(scalar_items)
    model = kernel_model(source, dialect, kernel)
    if model is None:
        return None
    if dialect == "opencl":  # OpenCL sizes are work-items
        grid = (-(-grid[0] // max(block[0], 1)), -(-grid[1] // max(block[1], 1)), -(-grid[2] // max(block[2], 1)))
    model = _with_defines(model, _defines(source))  # `for (i = -R; i <= R; i++)`: a window of constant bounds
    values = {**_defines(source), **scalars, **{f"blockDim.{a}": float(b) for a, b in zip("xyz", block)},
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
    neighbours: dict[tuple[object, ...], float] = {}  # DRAM bytes of a stencil's neighbour reads: the largest one counts
    other_branch = _other_branch(source, model) | _fallback(source, dialect, model)
    first_time = _once(source, model)
    for n, a in enumerate(model.accesses):
        if n in other_branch:
            continue
        if n in first_time:
            a = replace(a, nest=tuple(i for i in a.nest if model.loops[i].start >= first_time[n]))
        if a.array in model.shared:  # shared memory: the L1's SRAM and rate
            runs = _runs(model, _hoisted(model, a), values, strided)
            if runs is None:
                return None
            l1 += threads * runs * a.element_bytes * (1.0 / 32 if a.pattern == "uniform" and not a.write else 1.0)
            continue
        if not model.pointer(a.array):
            continue  # locals
        runs = _runs(model, _hoisted(model, a), values, strided)
        if runs is None:
            return None
        per_lane = {"coalesced": 1.0, "uniform": 1.0 / 32}.get(a.pattern, SECTOR / a.element_bytes)
        if a.pattern == "unknown" and _offset_grid_stride(source, model, a, strided):
            per_lane = 1.0
        shared = 1.0
        for axis in a.shared_by(("x", "y")):
            shared *= block["xy".index(axis)]
        l1 += threads * runs * _wavefronts(model, a, block, values) * LINE / 32
        key, window = _neighbourhood(model, a)
        if key is None:
            dram += threads * runs * a.element_bytes * per_lane / shared
            continue
        outer = _runs(model, tuple(i for i in a.nest if i not in window), values, strided)
        once = threads * (outer or 0.0) * a.element_bytes * per_lane / shared
        neighbours[key] = max(neighbours.get(key, 0.0), once)
    dram += sum(neighbours.values())
    deepest = max(range(len(model.loops)), key=lambda i: model.loops[i].depth, default=-1)  # the first deepest, as model.flops
    flop_runs = _runs(model, _nest(model, deepest), values, strided)
    flops = threads * (model.flops + _slow_math(source, dialect, kernel, model, deepest)) * (flop_runs or 0.0)
    fill = max(parallelism(grid, block, device).fill, 1.0 / device.sms)
    bounds = {"compute": flops / device.flops, "dram": dram / device.bandwidth, "l1": l1 / device.l1_bandwidth}
    which = max(bounds, key=lambda k: bounds[k])
    return Prediction(bounds[which] / fill, which, flops, dram, l1, fill)


# Arithmetic that is not one FP32 instruction, in FP32 flops of issue time (an FMA is 2 flops, one issue slot): a
# correctly rounded division or square root (`/`, sqrtf: a reciprocal or root estimate, refinement FMAs, a range check
# and its slow-path branch) and the accurate transcendentals (expf, sinf: library code with range reduction); an
# approximation from the special-function unit (rsqrtf, __expf, native_*), which issues at a quarter of the FMA rate.
# Rough, from the H200 zoo runs: nbody_soa's shared-memory form (12 flops, a sqrtf and a division per pair) ran 3.7x
# nbody_aos's (20 flops and an rsqrtf) per pair. What fast-math trades: `m / sqrtf(r2)` 80 flops, `m * rsqrtf(r2)` 10.
SLOW_FLOPS = 40.0
MUFU_FLOPS = 8.0
_SLOW_CALLS = frozenset({"sqrtf", "sqrt", "expf", "exp", "logf", "log", "sinf", "sin", "cosf", "cos", "powf", "pow",
                         "tanhf", "tanh", "exp2f", "log2f", "log10f", "expm1f", "log1pf", "cbrtf", "erff", "atan2f",
                         "sincosf", "tanf", "exp10f"})
_MUFU_CALLS = frozenset({"rsqrtf", "rsqrt", "__expf", "__logf", "__sinf", "__cosf", "__powf", "__fdividef", "__frcp_rn",
                         "native_rsqrt", "native_sqrt", "native_exp", "native_log", "native_sin", "native_cos",
                         "native_divide", "native_recip", "half_rsqrt", "half_exp", "exp2", "__exp2f",
                         "__sincosf", "__tanf", "__exp10f", "__log2f", "__log10f", "s2s_tanhf"})
_FLOAT_TYPE = re.compile(r"^(?:const\s+)?(?:float|double|half|__half)\d?\b")


def _slow_math(source: bytes, dialect: str, kernel: str | None, model: KernelModel, deepest: int) -> float:
    """The flops the model's count leaves out in the body of loop `deepest` (the one model.flops counts): every
    division of floating-point values and every call above (SLOW_FLOPS, MUFU_FLOPS) beyond the one flop it counted."""
    if deepest < 0:
        return 0.0
    found = find_kernel(parse(source, dialect).root_node, source, dialect, kernel)
    if found is None:
        return 0.0
    fn, lp = found[0], model.loops[deepest]
    loop = fn.descendant_for_byte_range(lp.start, lp.end)
    while loop is not None and loop.type != "for_statement":
        loop = loop.parent
    body = loop.child_by_field_name("body") if loop is not None else None
    if body is None:
        return 0.0
    floats = _float_names(source, fn)
    extra = 0.0
    for n in descendants(body):
        if n.type == "call_expression":
            f = n.child_by_field_name("function")
            name = src(source, f) if f is not None and f.type == "identifier" else ""
            extra += SLOW_FLOPS if name in _SLOW_CALLS else MUFU_FLOPS if name in _MUFU_CALLS else 0.0
        elif n.type in {"binary_expression", "assignment_expression"}:
            op = n.child_by_field_name("operator")
            if op is not None and src(source, op) in {"/", "/="} and _floating(source, n, floats):
                extra += SLOW_FLOPS - 1.0
    return extra


def _float_names(source: bytes, fn: Node) -> frozenset[str]:
    """The parameters and locals of a kernel declared float, double or half (scalars, pointers, vectors)."""
    names = set()
    for n in descendants(fn):
        if n.type not in {"declaration", "parameter_declaration"}:
            continue
        head = " ".join(src(source, c) for c in n.children if c.type in {"type_qualifier", "primitive_type", "type_identifier"})
        if not _FLOAT_TYPE.match(head):
            continue
        for top in n.children_by_field_name("declarator"):
            d: Node | None = top
            while d is not None and d.type != "identifier":
                d = d.child_by_field_name("declarator")
            if d is not None:
                names.add(src(source, d))
    return frozenset(names)


def _floating(source: bytes, node: Node, floats: frozenset[str]) -> bool:
    """Whether a division works on floating-point values: a float literal, a name declared floating, a math call."""
    for n in descendants(node):
        t = n.type
        if t == "number_literal" and not src(source, n).lower().startswith("0x") and any(ch in src(source, n) for ch in ".eEfF"):
            return True
        if t == "identifier" and (src(source, n) in floats or src(source, n) in _SLOW_CALLS or src(source, n) in _MUFU_CALLS):
            return True
    return False


LINE = 128  # bytes of an L1 wavefront (a cache line)
_ONCE = re.compile(rb"\bif\s*\(\s*!\s*(\w+)\s*\)\s*\{")


def _once(source: bytes, model: KernelModel) -> dict[int, int]:
    """{access index: start of its block} for the accesses inside `if (!flag) { ... flag = true; }` (a load made the
    first time a thread gets there, stencil-registers' coefficients): the loops around the block do not repeat it."""
    out: dict[int, int] = {}
    for m in _ONCE.finditer(source):
        depth, end = 0, -1
        for j in range(m.end() - 1, len(source)):
            depth += {ord("{"): 1, ord("}"): -1}.get(source[j], 0)
            if depth == 0:
                end = j
                break
        flag = re.escape(m.group(1))
        if end < 0 or not re.search(rb"\b" + flag + rb"\s*=\s*true\s*;\s*$", source[m.end():end]):
            continue
        for n, a in enumerate(model.accesses):
            if m.start() <= a.start < end:
                out[n] = m.start()
    return out


def _wavefronts(model: KernelModel, a: ArrayAccess, block: tuple[int, int, int], values: dict[str, float]) -> float:
    """L1 wavefronts (lines) one warp's execution of a global access costs: one for a warp-uniform read, for a
    unit-stride one ceil(bytes / 128) plus the share of its executions that start off a line (the index's offset from
    the thread's point, evaluated over its short loops, not a multiple of the warp's bytes); sectors for the rest."""
    if a.pattern == "uniform":
        return 1.0
    if a.pattern != "coalesced":
        per_lane = SECTOR / a.element_bytes if a.pattern in {"strided", "unknown"} else 1.0
        return 32 * a.element_bytes * per_lane / LINE
    seg_bytes = 32 * a.element_bytes  # a block narrower than a warp is not charged its second row's lines: on the H200
    # conv2d_3x3's 16x16 block ran 0.95x-1.09x of 32x8, 32x4 and 128x1, where a line per row segment predicted 1.6x
    return -(-seg_bytes // LINE) + _off_line(model, a, values, seg_bytes) * min(1.0, seg_bytes / LINE)


def _off_line(model: KernelModel, a: ArrayAccess, values: dict[str, float], seg_bytes: int) -> float:
    """The share of an access's executions whose offset from the thread's point is not a multiple of a segment (0
    where the offset is not known: counted as on the line)."""
    p = a.index[-1]
    if p is None or len(a.index) != 1:
        return 0.0
    mapped = {m.var for m in model.mapping} | {"threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y", "blockIdx.z"}
    rest = Poly(tuple((mono, c) for mono, c in p.terms if not set(mono) & mapped))
    short = [model.loops[i] for i in a.nest if model.loops[i].var in rest.names]
    ranges = []
    for lp in short:
        lo, hi = (_value(b, values) if b is not None else None for b in (lp.lower, lp.upper))
        if lo is None or hi is None or not lp.step or not 0 < (hi - lo) / lp.step <= UNROLLED:
            return 0.0
        ranges.append((lp.var, range(int(lo), int(hi), lp.step)))
    offs = []
    for combo in itertools.product(*(r for _, r in ranges)):
        env = {**values, **dict(zip((v for v, _ in ranges), map(float, combo)))}
        v = _value(rest, env)
        if v is None or any(n not in env for n in rest.names):
            return 0.0
        offs.append(int(v) * a.element_bytes % seg_bytes != 0)
    return sum(offs) / len(offs) if offs else 0.0


UNROLLED = 16  # a constant-bounded loop of at most this many steps is unrolled by the compiler


def _hoisted(model: KernelModel, a: ArrayAccess) -> tuple[int, ...]:
    """The loops a read runs in once the compiler has hoisted it out of the innermost unrolled loops its index does
    not use: `for (kk) for (r < 8) acc[r] += As[ty + 8*r][kk] * Bs[kk][tx]` loads Bs[kk][tx] once per kk, into a
    register (what register blocking is for). Writes, and reads under a loop whose index they use, stay where they are."""
    nest = list(a.nest)
    if a.write or not a.affine:
        return a.nest
    while nest:
        lp = model.loops[nest[-1]]
        lo, hi = (p.constant() if p is not None else None for p in (lp.lower, lp.upper))
        if lo is None or hi is None or not lp.step or (hi - lo) / lp.step > UNROLLED or a.depends_on(lp.var):
            break
        nest.pop()
    return tuple(nest)


_ELSE = re.compile(r"\s*\}?\s*else\s*\{?\s*")


def _other_branch(source: bytes, model: KernelModel) -> frozenset[int]:
    """Accesses in the `else` branch of an if/else whose branches hold the same loops over the same accesses (a full
    tile and an edge tile, `if (t + 64 <= n) for (kk < 64) ... else for (kk < n - t) ...`): one branch runs, the first
    (the full tile, all but the last step), so the second's copies are not counted again."""
    out = set()
    for j, b in enumerate(model.accesses):
        for a in model.accesses[:j]:
            if (a.array, a.text) != (b.array, b.text) or a.nest == b.nest or len(a.nest) != len(b.nest):
                continue
            k = next(i for i, (x, y) in enumerate(zip(a.nest, b.nest)) if x != y)
            first, second = model.loops[a.nest[k]], model.loops[b.nest[k]]
            if first.end <= second.start and _ELSE.fullmatch(source[first.end:second.start].decode("utf-8", "replace")):
                out.add(j)
                break
    return frozenset(out)


def _fallback(source: bytes, dialect: str, model: KernelModel) -> frozenset[int]:
    """Global accesses in the `else` of `if (in range) atomicAdd(&shared[..], v); else ...` (passes/reductions/shared_histogram.py:
    a bin outside the block's shared copy falls back to the global histogram): counted as their shared add."""
    if not model.shared:
        return frozenset()
    arms = []
    stack = [parse(source, dialect).root_node]
    while stack:
        n = stack.pop()
        stack.extend(n.children)
        hit, alt = n.child_by_field_name("consequence"), n.child_by_field_name("alternative")
        if n.type == "if_statement" and hit is not None and alt is not None and \
                re.match(rf"\s*\{{?\s*atomicAdd\s*\(\s*&\s*(?:{'|'.join(map(re.escape, model.shared))})\s*\[", src(source, hit)):
            arms.append((alt.start_byte, alt.end_byte))
    return frozenset(i for i, a in enumerate(model.accesses) if any(lo <= a.start and a.end <= hi for lo, hi in arms))


WINDOW = 8  # a constant-bounded loop of at most this many steps, moving an index with a thread: a stencil's window
ROWS = 40  # a constant-bounded loop over rows that neighbouring threads' loops continue (a register window's)


def _overlapping(a: ArrayAccess, var: str, trips: int) -> bool:
    """A loop whose steps move the index by 1/k of a thread axis's step (k <= its trips): the rows of neighbouring
    threads along that axis touch or overlap (stencil-registers' window of F + 4 rows, F rows apart, thread-coarsen's
    F points), so DRAM serves each row once and the caches the rest."""
    for p, t in zip(a.index, a.threads):
        c = p.coeff(var) if p is not None else Poly()
        if c.is_zero or t is None:
            continue
        for axis in ("threadIdx.y", "threadIdx.z"):
            step = t.coeff(axis)
            if not step.is_zero and any(c * Poly.const(k) == step for k in range(1, trips + 1)):
                return True
    return False


def _neighbourhood(model: KernelModel, a: ArrayAccess) -> tuple[tuple[object, ...] | None, frozenset[int]]:
    """(key, window loops) of a global read whose neighbours come from the caches: the array and its index without
    parameter-only offsets and without window loops' variables, in the same loops; reads with one key are one stencil.
    A window loop (constant bounds, at most WINDOW steps) has a variable whose coefficient in the index is a mapped
    thread variable's (`x + dx`); in an index the model cannot read, one whose name the access's text holds.
    (None, {}) for writes, reads with no thread or loop variable, and unreadable reads outside a window."""
    if a.write:
        return None, frozenset()
    mapped = {m.var for m in model.mapping}
    window: set[int] = set()
    for i in a.nest:
        lp = model.loops[i]
        lo, hi = (p.constant() if p is not None else None for p in (lp.lower, lp.upper))
        if lo is not None and hi is not None and lp.step and (hi - lo) / lp.step <= ROWS and a.affine \
                and _overlapping(a, lp.var, int((hi - lo) / lp.step)):
            window.add(i)
            continue
        if lo is None or hi is None or not lp.step or (hi - lo) / lp.step > WINDOW:
            continue
        if not a.affine or a.pattern == "unknown":  # `a[IDX(i + di, j + dj)]` over `i = p / N`: the name in the text
            if re.search(rf"\b{re.escape(lp.var)}\b", a.text):
                window.add(i)
        elif any(p is not None and not p.coeff(lp.var).is_zero and any(p.coeff(lp.var) == p.coeff(m) for m in mapped)
                 for p in a.index):
            window.add(i)
    if not a.affine or a.pattern == "unknown":  # its own text is its neighbourhood; only a window saves DRAM here
        outer = tuple(i for i in a.nest if i not in window)
        return ((a.array, outer, a.text), frozenset(window)) if window else (None, frozenset())
    variables = mapped | {model.loops[i].var for i in a.nest} | {"threadIdx.x", "threadIdx.y", "threadIdx.z",
                                                               "blockIdx.x", "blockIdx.y", "blockIdx.z"}
    drop = {model.loops[i].var for i in window}
    index = []
    for p in a.index:
        assert p is not None
        q = p.drop(drop)
        kept = Poly(tuple((m, c) for m, c in q.terms if set(m) & variables))  # parameter-only offsets dropped
        index.append(kept)
    if not any(p.names & variables for p in index):  # `a[0]`, `a[n]`: no neighbourhood
        return None, frozenset()
    outer = tuple(i for i in a.nest if i not in window)
    return (a.array, outer, tuple(index)), frozenset(window)


_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+\(?[ \t]*(\d+)[ \t]*\)?[ \t]*(?://.*)?$", re.M)


def _defines(source: bytes) -> dict[str, float]:
    """The kernel file's integer object-like macros (`#define NZ 512`, the sizes an extracted MEP carries), for the
    loop bounds that use them; a name defined twice (under #if branches) is left out."""
    seen: dict[str, set[float]] = {}
    for m in _DEFINE.finditer(source):
        seen.setdefault(m.group(1).decode(), set()).add(float(m.group(2)))
    return {k: next(iter(v)) for k, v in seen.items() if len(v) == 1}


def _with_defines(model: KernelModel, defines: dict[str, float]) -> KernelModel:
    """The model with the file's integer macros in its loop bounds."""
    def sub(p: Poly | None) -> Poly | None:
        for n in (p.names if p is not None else frozenset()) & set(defines):
            p = p.subst(n, Poly.const(int(defines[n])))  # type: ignore[union-attr]
        return p
    if not defines:
        return model
    return replace(model, loops=tuple(replace(lp, lower=sub(lp.lower), upper=sub(lp.upper)) for lp in model.loops))


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


_GID_LAST = re.compile(r"=\s*\S.*\+\s*(?:blockIdx\.x\s*\*\s*blockDim\.x|blockDim\.x\s*\*\s*blockIdx\.x)\s*\+\s*threadIdx\.x\s*;")


def _offset_grid_stride(source: bytes, model: KernelModel, a: ArrayAccess, strided: frozenset[int]) -> bool:
    """`P[i]` in `for (int i = START + GID; ...; i += GRID STRIDE)` (the scalar tail after whole words,
    passes/memory/_vector_words.py): consecutive threads read consecutive elements whatever START, which the model cannot read."""
    lp = model.loops[a.nest[-1]] if a.nest else None
    if lp is None or a.nest[-1] not in strided or a.flat is None or a.flat.terms != (((lp.var,), 1),):
        return False
    return bool(_GID_LAST.search(source[lp.start:lp.end].decode("utf-8", "replace").split(";", 1)[0] + ";"))


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


def _flops_class(flops: float) -> int:
    """Flops in steps of 10%: at equal predicted times the candidate with clearly less arithmetic first (fast-math's
    rsqrtf against the same memory-bound loop with a division and a square root); closer counts keep their order."""
    return round(math.log(flops) / math.log(1.1)) if flops > 0 else 0


def rank(predictions: dict[str, Prediction | None]) -> list[str]:
    """Candidate ids, the ones predicted fastest first (at equal times a counted prediction before a floored one);
    those without a prediction last, in the order given."""
    known = sorted((p.seconds, p.bound == FLOOR, _flops_class(p.flops), i, k) for i, (k, p) in enumerate(predictions.items())
                   if p is not None)
    return [k for *_, k in known] + [k for k, p in predictions.items() if p is None]


__all__ = ["Prediction", "predict", "predict_candidate", "rank", "order", "profiled", "record", "original_prediction", "ArrayAccess"]


def _scalars(state: State) -> dict[str, float]:
    return {p.name: float(p.value) for p in state.manifest.params
            if p.role == "scalar" and isinstance(p.value, (int, float)) and not isinstance(p.value, bool)}


BLIND = 0.25  # a candidate predicted to move less than this share of the bytes it must move uses accesses the model misses


def predict_candidate(c: Candidate | None, state: State) -> Prediction | None:
    """The model's time for one launch of candidate `c` (None: the original) with the MEP's scalars. A candidate
    moves at least the bytes the launch must move (mep.toml's buffers once, or the original's own bytes where fewer):
    its DRAM bound never goes below theirs, whatever loops the model could not count (a z-chunk between max() and
    min() bounds counted once)."""
    launch = (c.launch if c is not None else None) or state.base_launch
    p = predict(c.source if c is not None else state.original, state.dialect, state.kernel, launch.grid, launch.block,
                _scalars(state), state.target)
    if c is None or p is None:
        return p
    base = predict_candidate(None, state)
    need = min(compulsory_bytes(state.manifest) or base.dram_bytes, base.dram_bytes) if base is not None else None
    if not need or p.dram_bytes >= need:
        return p
    floor = need / state.target.bandwidth  # at the full bandwidth: a floor, whatever the launch fills
    return p if floor <= p.seconds else Prediction(floor, FLOOR, p.flops, p.dram_bytes, p.l1_bytes, p.fill)


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
    by_id = {id(c): timed[str(i)] for i, c in enumerate(candidates)}
    ranked = profiled(limiter_first(ranked, base, by_id), state.feedback.get("original"), base, by_id, state)
    first = [c for c in ranked if _register_blocked(c, state, timed[str(candidates.index(c))])]
    first += sorted((c for c in ranked if _first_pass(c) and c not in first), key=_space_position)
    return halved_first(first + [c for c in ranked if c not in first], state.target.sms)


MEMORY_BOUNDS = frozenset({"dram", "l1", FLOOR})


def limiter_first(ranked: list[Candidate], base: Prediction, timed: dict[int, Prediction | None]) -> list[Candidate]:
    """The candidates the model cannot tell from the original (the same predicted time, DRAM bytes and flops:
    restrict-const's qualifiers, loop-unroll's copies of a body) whose pass declares what it acts on (`acts_on`) are
    reordered among their own places: first those acting on what limits the original by the model (its bound: DRAM or
    L1 -> memory; compute), then those acting on the other resource. Every other candidate keeps its place (a structural
    rewrite the model cannot read, warp-reduce-atomics' shuffles, stays ahead of both). With three or four evaluations a kernel, a
    memory-bound kernel tries read-only loads before an unrolled loop and a compute-bound one the reverse, where the
    passes' own priorities put restrict-const first everywhere (the development corpus's run at 3 evaluations a kernel:
    restrict-const alone 12 times, at best 1.04x; loop-unroll alone 12 times, at best 1.01x, at worst 0.30x)."""
    limit = "memory" if base.bound in MEMORY_BOUNDS else "compute"

    def neutral(c: Candidate) -> bool:
        p = timed.get(id(c))
        return p is not None and (p.seconds, p.dram_bytes, p.flops) == (base.seconds, base.dram_bytes, base.flops)

    places = [i for i, c in enumerate(ranked) if neutral(c) and _acts_on(c)]
    group = sorted((ranked[i] for i in places), key=lambda c: _acts_on(c) != limit)
    out = list(ranked)
    for i, c in zip(places, group):
        out[i] = c
    return out


def _acts_on(c: Candidate) -> str:
    """What the pass of a candidate's last step declares it acts on ("memory", "compute"), "" when nothing."""
    from s2s.optimize.registry import get_pass

    step = _last_step(c)
    try:
        return str(getattr(get_pass(step), "acts_on", "")) if step else ""
    except KeyError:
        return ""


HALVED_PASS = "contraction-triangle"  # contraction-blocking's tiles on one side of the diagonal: half the blocks


def halved_first(ranked: list[Candidate], sms: int = H200.sms) -> list[Candidate]:
    """Each contraction-triangle candidate moved just before the first contraction-blocking one of the same pipeline
    prefix: it applies only where the output is a triangle or a symmetric product, and there it runs the same tiles
    with the blocks above the diagonal left out (the model counts the whole grid's work for both). Among them the
    64-wide tiles first where the triangle has fewer 128-wide tiles than two a SM (four times the blocks: 2048 x 2048
    has 136, one an SM and four SMs with two, the time of two), the 128-wide ones first otherwise."""
    halved = [c for c in ranked if _last_step(c) == HALVED_PASS]
    small = [c for c in halved if "tile=64" in c.origin.rsplit(HALVED_PASS, 1)[1]]
    wide = [c for c in halved if c not in small and c.launch is not None]
    few = bool(wide) and _triangle_tiles(wide[0].launch.grid) < 2 * sms  # type: ignore[union-attr]
    order_ = (small + [c for c in halved if c not in small]) if few else ([c for c in halved if c not in small] + small)
    ranked = [order_.pop(0) if _last_step(c) == HALVED_PASS else c for c in ranked]
    out = list(ranked)
    for c in ranked:
        if _last_step(c) != HALVED_PASS:
            continue
        prefix = c.origin.split("+repair")[0].rsplit(HALVED_PASS, 1)[0]
        peer = next((i for i, x in enumerate(out) if _last_step(x) == BLOCKED_PASS and x.origin.startswith(prefix)
                     and x.origin.split("+repair")[0][len(prefix):].startswith(BLOCKED_PASS)), None)
        if peer is not None and out.index(c) > peer:
            out.remove(c)
            out.insert(peer, c)
    return out


def _triangle_tiles(grid: tuple[int, ...]) -> int:
    """The tiles on one side of the diagonal (with it) of a grid of tiles, rows clipped to the columns."""
    return sum(min(b + 1, grid[0]) for b in range(grid[1]))


LOW_OCCUPANCY = 40.0  # % of the SMs' warp slots: below it a latency-limited kernel lacks warps to hide latency
NEAR_COPY = 0.8  # of the copy bandwidth: a memory-bound kernel this close can only gain by moving fewer bytes
IN_FLIGHT = frozenset({"vector-loads", "vector-elementwise", "vector-elementwise-2d", "struct-wide-io", "loop-unroll"})  # wider or more loads per thread
LESS_WORK = 0.5  # a candidate predicted to issue under half the original's arithmetic shortens a latency-bound thread's chains
# (fast-math's rsqrtf for a rounded division and square root: nbody_soa at 12% occupancy on the H200)


def profiled(ranked: list[Candidate], profile: Any, base: Prediction, timed: dict[int, Prediction | None],
             state: State) -> list[Candidate]:
    """The model's order adjusted by the original's Nsight Compute profile (s2s.mep.profile_ncu.Profile), stable within
    each group: a latency-limited original at low occupancy ranks first the candidates that add parallelism (more
    threads, or a launch that fills more of the device), bytes in flight (IN_FLIGHT passes) or less arithmetic (LESS_WORK:
    shorter dependency chains); a memory-bound original
    near the copy bandwidth ranks last those not predicted to move fewer DRAM bytes (reordered compute cannot help it).
    Unchanged without a profile."""
    if profile is None:
        return ranked
    if profile.limiter == "latency" and profile.occupancy_pct < LOW_OCCUPANCY:
        threads = _threads(state.base_launch)
        up = [c for c in ranked if _last_step(c) in IN_FLIGHT or _threads(c.launch or state.base_launch) > threads
              or ((p := timed.get(id(c))) is not None and (p.fill > base.fill or 0 < p.flops < LESS_WORK * base.flops))]
        return up + [c for c in ranked if c not in up]
    if profile.limiter == "memory" and profile.dram_gbs >= NEAR_COPY * state.target.copy_bandwidth / 1e9:
        down = [c for c in ranked if (p := timed.get(id(c))) is None or p.dram_bytes >= 0.95 * base.dram_bytes]
        return [c for c in ranked if c not in down] + down
    return ranked


def _threads(launch: Any) -> int:
    return launch.grid[0] * launch.grid[1] * launch.grid[2] * launch.block[0] * launch.block[1] * launch.block[2]


def _last_step(c: Candidate) -> str:
    """The pass of a candidate's last step: `pass:a,b{x=1}+repair` -> `b`."""
    if not c.origin.startswith("pass:"):
        return ""
    head = c.origin.split("+repair")[0][len("pass:"):]
    depth, cut = 0, 0
    for i, ch in enumerate(head):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            cut = i + 1
    return head[cut:].split("{")[0]


BLOCKED_PASS, BLOCKED_TILE = "contraction-blocking", 128


def _register_blocked(c: Candidate, state: State, p: Prediction | None) -> bool:
    """A 128x128 register-blocked contraction (contraction-blocking) whose launch fills every SM with at least one tile
    and whose outputs each sum at least 128 terms: what the model cannot see makes it the likely winner, so it goes
    first. The model counts shared memory as free and reads its float4 loads, whose thread mapping is not affine,
    as strided; it does not credit the 64 independent accumulators per thread that hide latency where few threads
    run. (The fastest form of a hand-written SGEMM; bench/plans/gemm_forms.toml measures it against the others.)"""
    steps = c.origin.split("+repair")[0].removeprefix("pass:").split(",")
    if not c.origin.startswith("pass:") or not steps[-1].startswith(BLOCKED_PASS) or c.launch is None or p is None:
        return False
    blocks = c.launch.grid[0] * c.launch.grid[1] * c.launch.grid[2]
    outputs = blocks * BLOCKED_TILE * BLOCKED_TILE
    return blocks >= state.target.sms and p.flops >= 2.0 * 128 * outputs


FIRST_PASSES = ("row-coarsen", "loads-first", "triangular-solve-blocking{strip=", "walk-registers{chunks=",
                "launch-config{block=32x8},walk-registers{chunks=")  # first steps the model misreads, measured
# faster than what it ranks first (the strip form's float4 rows through reinterpret_cast: hand strips 230 us on trsm_cols, rows=16 516;
# walk-registers' chunked columns: the hand probe of heat3d_zloop ran 293.7 us, 85% of the copy floor, against the original's 372)


WARP_FIRST = ("block-reduce-shuffle{warps=",)  # one warp a block's elements in float4 words through reinterpret_cast: the
# model reads them as 1.5 times the bytes (201 of 134 MB on dot_blocks) and sees no barriers; the H200 probe ran 34.6 us (91% of the
# copy floor) against coarsen=4's 45.3 and the plain tree's 82.7


CLUSTER_FIRST = ("split-reduction{splits=8 cols=32 quad=4 cluster=8}",)  # a column walk summed by a thread-block cluster: the
# model reads its float4 words (the thread index times 4) as strided, ten times the bytes; the hand probe on the H200 ran at 72% of
# the copy bandwidth (gemv_cols 21.8 us, gemv_colmajor 22.0) where the model's first, 32 x 16 splits, ran 67% / 64%


def _first_pass(c: Candidate) -> bool:
    """A candidate whose first step is one of FIRST_PASSES: they go first, in their space's order (the pass's own order
    of its measured forms), not the model's. row-coarsen: the model reads the row's float4 words, whose thread mapping
    strides by the row, as strided DRAM traffic and ranks the original above it; on the H200 batched_gemm8 went from 54%
    to 83% of the copy bandwidth (1.54x, with 128-thread blocks). loads-first: the model sees the same loads and stores,
    the time was the two round trips one after the other; fdtd_e went from 60% to 86% (1.43x) where the model ranks
    delinearize-2d's forms first (measured 0.90-0.95x). Both passes refuse every other kernel of the zoo."""
    from s2s.optimize.registry import without_normalization

    step = without_normalization(c.origin.removeprefix("pass:"))  # behind `normalize` the same step
    return c.origin.startswith("pass:") and any(step.startswith(p) for p in FIRST_PASSES + CLUSTER_FIRST + WARP_FIRST)


def _space_position(c: Candidate) -> int:
    from s2s.optimize.registry import search_space

    space = search_space()
    step = c.origin.split("+repair")[0].removeprefix("pass:")
    return space.index(step) if step in space else len(space)


ORIGINAL_KEY = "cost_model"  # history meta: the model's prediction for the original, {predicted_us, ...}


def detail(p: Prediction, device: TargetDevice = H200) -> dict[str, object]:
    """A prediction as stored beside a candidate (history column `prediction`)."""
    return {"bound": p.bound, "flops": p.flops, "dram_bytes": p.dram_bytes, "l1_bytes": p.l1_bytes, "fill": p.fill,
            "device": device.name}


def record(history: Any, state: State, candidates: list[Candidate]) -> None:
    """Record the model's predicted time of each candidate as it is proposed (history columns `predicted_us`,
    `prediction`), and once per MEP the original's (meta `cost_model`), so the report can judge how well the model
    ranks against the measurements. Every dialect is recorded, OpenCL too: the prediction is for the target device
    (state.target: the MEP's, an H200 when nothing is known), and the report says which device measured. A kernel
    the model cannot read records nothing."""
    if history.meta(ORIGINAL_KEY) is None:
        base = _safe(None, state)
        history.set_meta(ORIGINAL_KEY, json.dumps({"predicted_us": base.seconds * 1e6 if base else None,
                                                   **(detail(base, state.target) if base else {"device": state.target.name})}))
    for c in candidates:
        p = _safe(c, state)
        if p is not None:
            history.set_prediction(c.id, p.seconds, detail(p, state.target))


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
