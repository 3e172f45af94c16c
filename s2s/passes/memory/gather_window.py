"""gather-window: a loop's indirect reads `x[idx[k]]` of a read-only array served from a window of it in shared memory.

An SpMV-like gather touches as many cache lines per warp load as it has lanes (each lane's column is its own), so the
L1 serves it in as many wavefronts, while the block's rows together read only a narrow band of `x` (banded and
PDE-like matrices). Each thread takes the index its loop reads on its first trip (the loop's own header, condition and
the loop body's declarations before the read, under the kernel's guards); the block's least and greatest of those
(shared-memory atomics) bound a window of at most `cap` elements that the block loads once, coalesced, into shared
memory. Every read then checks its index against the window at run time and falls back to the global array outside it,
so any index data is read exactly as before: the window only decides which reads are cheap. Elements between two indices
the kernel reads are inside the array, so the window never reads past it. Measured on the H200 it loses on the zoo's
SpMVs (their time is not the gather's: spmv_ell takes the same 243 us on banded and on uniform columns), so the search
leaves it out. The launch is kept, or with `block` its
threads regrouped into blocks of that many (more rows sharing one window).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts, idents, shape_bound

from ..common.guards import loop_block
from ..common.tree import body_node, fresh, indent_of, node_at, statements, text
from ._gather import declared, early_return, first_trip, gathers, pure, returns

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void spmv(const int* rowptr, const int* cols, const float* vals, const float* x, float* y, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n) {
        float dot = 0.0f;
        for (int k = rowptr[row]; k < rowptr[row + 1]; k++)
            dot += vals[k] * x[cols[k]];
        y[row] = dot;
    }
}
"""
EXAMPLE_AFTER = """\
__global__ void spmv(const int* rowptr, const int* cols, const float* vals, const float* x, float* y, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    __shared__ float xw[4096];
    __shared__ int xw_lo, xw_hi;
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
        xw_lo = 0x7fffffff;
        xw_hi = -0x7fffffff - 1;
    }
    int xw_v = 0x7fffffff, xw_u = -0x7fffffff - 1;  // the first trip's index
    if (row < n) {
        int k = rowptr[row];
        if (k < rowptr[row + 1]) {
            xw_v = xw_u = (int)(cols[k]);
        }
    }
    __syncthreads();
    #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800  // one atomic a warp
    {
        const int xw_tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        const int xw_m = blockDim.x * blockDim.y * blockDim.z - (xw_tid & ~31);
        xw_v = __reduce_min_sync(xw_m >= 32 ? 0xffffffffu : (1u << xw_m) - 1u, xw_v);
        xw_u = __reduce_max_sync(xw_m >= 32 ? 0xffffffffu : (1u << xw_m) - 1u, xw_u);
        if ((xw_tid & 31) == 0) { atomicMin(&xw_lo, xw_v); atomicMax(&xw_hi, xw_u); }
    }
    #else
    if (xw_v <= xw_u) { atomicMin(&xw_lo, xw_v); atomicMax(&xw_hi, xw_u); }
    #endif
    __syncthreads();
    const int xw_base = xw_lo;
    const int xw_n = xw_hi < xw_base ? 0 : (long long)xw_hi - xw_base >= 4096 ? 4096 : xw_hi - xw_base + 1;
    #pragma unroll 4
    for (int xw_t = threadIdx.x; xw_t < xw_n; xw_t += blockDim.x)
        xw[xw_t] = x[xw_base + xw_t];
    __syncthreads();
    if (row < n) {
        float dot = 0.0f;
        for (int k = rowptr[row]; k < rowptr[row + 1]; k++)
            dot += vals[k] * ((unsigned)(cols[k]) - (unsigned)xw_base < (unsigned)xw_n ? xw[(unsigned)(cols[k]) - (unsigned)xw_base] : x[cols[k]]);
        y[row] = dot;
    }
}
"""


@dataclass(frozen=True)
class GatherWindow:
    name: ClassVar[str] = "gather-window"
    WHY_IT_EXISTS: ClassVar[str] = "banded SpMV-like gathers x[idx[k]]; explicit pipelines only (slower on the zoo SpMVs)"
    priority: ClassVar[int] = 900  # after every other pass
    # not searched: slower than the original on both zoo SpMVs on the H200 (e1c49fb: spmv_ell 0.50-0.97x, spmv_csr
    # 0.90x alone and 1.23x after warp-rows{lanes=8 block=1024}, which alone gives 1.37x): explicit pipelines only
    space: ClassVar[tuple[str, ...]] = ()
    cap: int = 4096  # elements of the window (its shared memory is cap * the element's size)
    block: int = 0  # threads a block (same coverage: more rows share one window), 0 keeps the launch's

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.dialect == "opencl":
            return "the window's bounds use shared-memory atomicMin/atomicMax (CUDA and HIP only)"
        if self.cap < 256 or self.cap > 12288 or self.cap % 256:
            return "cap must be a multiple of 256 from 256 to 12288 elements"
        if self.block and (self.block % 32 or not 32 <= self.block <= 1024):
            return "block must be a multiple of 32 from 32 to 1024 threads (0 keeps the launch's)"
        if facts.dims != 1 or facts.var_for("x") == "":
            return "needs a 1-D thread mapping (i = blockIdx.x * blockDim.x + threadIdx.x)"
        if facts.shared or facts.atomics:
            return "kernel already uses shared memory or atomics"
        found = gathers(facts)
        return True if not isinstance(found, str) else found

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        found = gathers(facts)
        if isinstance(found, str):
            return Refused(found)
        lanes = re.sub(r"threadIdx\.x\s*%\s*(?:1|2|4|8|16|32)u?\b", " ", source[facts.body_start : facts.body_end].decode())
        if self.block and (shape_bound(lanes) or facts.launch_bounds):  # a lane within its warp is the same in any block
            return Refused("the kernel's work or its __launch_bounds__ depend on the block shape: block must stay 0")
        array, reads = found
        loop = facts.loops[reads[0].loops[0]]
        var = facts.var_for("x")
        top = statements(body_node(source, facts))
        stmts, wrapper = loop_block(source, top, loop.start, var)
        at = next((i for i, s in enumerate(stmts) if s.start_byte == loop.start), -1)
        if at < 0:
            return Refused("the gathering loop must be a statement of the kernel body or of its last guard `if (i < n) { ... }`")
        outer = stmts[:at] if wrapper is None else [*top[: top.index(wrapper)], wrapper, *stmts[:at]]
        head = next((i for i, s in enumerate(outer) if s.type != "declaration"), len(outer))
        conds: list[str] = []
        kept: list[Node] = []
        for s in outer[head:]:
            guard = early_return(source, s)
            if s == wrapper:
                conds.append(text(source, s.child_by_field_name("condition")).strip())
            elif guard is not None:
                conds.append(f"!{guard}")
            elif s.type == "declaration" and pure(s):
                kept.append(s)
            else:
                return Refused(f"`{text(source, s).splitlines()[0]}` between the thread index and the loop is neither a pure "
                               "declaration nor an early `if (...) return;` (the window's first trip cannot be replayed)")
        if any(returns(s) for s in outer[:head]):
            return Refused("a return precedes the loop's guards (every thread of a block must reach the window's barriers)")
        if any("__syncthreads" in text(source, s) for s in top):
            return Refused("kernel already synchronizes its block")
        loop_node = node_at(source, facts, loop.start, loop.end, "for_statement")
        first = first_trip(source, loop_node, reads[0]) if loop_node is not None else "the loop is not a for loop"
        if isinstance(first, str):
            return Refused(first)
        decls, index = first
        insert_at = (outer[head] if head < len(outer) else stmts[at]).start_byte
        pad = indent_of(source, insert_at)
        elem = facts.param(array).base_type  # type: ignore[union-attr]
        w, lo, hi = fresh(facts, source, "xw"), fresh(facts, source, "xw_lo"), fresh(facts, source, "xw_hi")
        base, n, v, t = fresh(facts, source, "xw_base"), fresh(facts, source, "xw_n"), fresh(facts, source, "xw_v"), fresh(facts, source, "xw_t")
        needed = idents(" ".join([loop.init, loop.cond, index, *decls]))
        replayed: list[str] = []
        for d in reversed(kept):  # the declarations the first trip reads, directly or through each other
            if declared(source, d) & needed:
                replayed.insert(0, text(source, d))
                needed |= idents(text(source, d))
        u, tid, m = fresh(facts, source, "xw_u"), fresh(facts, source, "xw_tid"), fresh(facts, source, "xw_m")
        inner = [*replayed, loop.init.strip().rstrip(";") + ";", f"if ({loop.cond}) {{", *[f"    {d}" for d in decls],
                 f"    {v} = {u} = (int)({index});", "}"]
        active = " && ".join(conds)
        body = [f"if {active} {{" if len(conds) == 1 and active.startswith("(") else f"if ({active}) {{", *[f"    {line}" for line in inner], "}"] if conds else ["{", *[f"    {line}" for line in inner], "}"]
        cap = self.cap
        bounds = f"{{ atomicMin(&{lo}, {v}); atomicMax(&{hi}, {u}); }}"
        lines = [f"__shared__ {elem} {w}[{cap}];", f"__shared__ int {lo}, {hi};",
                 "if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {", f"    {lo} = 0x7fffffff;",
                 f"    {hi} = -0x7fffffff - 1;", "}", f"int {v} = 0x7fffffff, {u} = -0x7fffffff - 1;  // the first trip's index",
                 *body, "__syncthreads();", "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800  // one atomic a warp",
                 "{", f"    const int {tid} = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);",
                 f"    const int {m} = blockDim.x * blockDim.y * blockDim.z - ({tid} & ~31);",
                 f"    {v} = __reduce_min_sync({m} >= 32 ? 0xffffffffu : (1u << {m}) - 1u, {v});",
                 f"    {u} = __reduce_max_sync({m} >= 32 ? 0xffffffffu : (1u << {m}) - 1u, {u});",
                 f"    if (({tid} & 31) == 0) {bounds}", "}", "#else", f"if ({v} <= {u}) {bounds}", "#endif", "__syncthreads();",
                 f"const int {base} = {lo};",
                 f"const int {n} = {hi} < {base} ? 0 : (long long){hi} - {base} >= {cap} ? {cap} : {hi} - {base} + 1;",
                 "#pragma unroll 4", f"for (int {t} = threadIdx.x; {t} < {n}; {t} += blockDim.x)",
                 f"    {w}[{t}] = {array}[{base} + {t}];", "__syncthreads();"]
        edits = [Edit(insert_at, insert_at, "".join(f"{line}\n{pad}" for line in lines))]
        for r in reads:
            i = source[r.start : r.end].decode()
            idx = i[i.index("[") + 1 : i.rindex("]")].strip()
            off = f"(unsigned)({idx}) - (unsigned){base}"
            edits.append(Edit(r.start, r.end, f"({off} < (unsigned){n} ? {w}[{off}] : {array}[{idx}])"))
        launch = LaunchChange((self.block, 1, 1), "same-coverage") if self.block else None
        return Rewrite(tuple(edits), launch, f"reads of {array} through a shared window of up to {cap} elements "
                                           f"bounded by the block's first-trip indices")
