"""split-reduction: a thread-per-output reduction loop is split over more threads, chosen from the kernel model.

A matrix-vector product launched with one thread per row keeps 4,096 threads busy on a GPU that holds 270,000,
and each walks its row alone. When the term reads along k (a row walk, `A[i*n+k]`), `lanes` threads of one warp
share an output and split k, then add their partial sums with shuffles (CUDA). When neighbouring threads already
read neighbouring elements (a column walk, `A[k*n+i]`), the threads stay and `splits` of them along y share each
output, adding their partials in order through shared memory (CUDA and OpenCL). A block holds `cols` outputs: at
32 a 4096-column product gives 128 blocks, one per SM of an H200 with 16 warps each, whatever `splits`; 16 outputs by
32 splits give 256 blocks of 512 threads, and measured 15% faster than 32 x 16 on the H200 (68% of the copy bandwidth
for gemv_cols). 8 outputs (512 blocks) measured no faster than 32: a warp's 32-byte row pieces. Either way the accumulator gets
the statements before the loop first and then the sum of the terms: the order of additions changes, within the
MEP's tolerance; no atomics. The guard becomes a condition, so every thread reaches the shuffle or the barrier.
In lanes mode each lane reads quads of the row in float4 words where every array steps by one element and the row
starts 16-byte aligned (passes/reductions/_lane_quads.py; `vec=1` keeps one element per lane and trip). `lanes` under 32 shares
an output among 4-16 lanes (a shuffle of that width): for short rows, such as batched_gemv16's 16 floats once
inner-loop-threads and coalesce-remap put the row on x and the batch on y (a kernel's y index is kept, only with
lanes under 32: a 2-D grid of long sums is a contraction; splits mode, which needs threadIdx.y, is refused there), 4
lanes of one float4 each read 8 rows of a matrix per warp load.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.reduction_loop import ReductionLoop, find_reduction_loop

from ..common.tree import fresh
from ._cluster_columns import cluster_rewrite
from ._column_quads import column_quads
from ._lane_quads import lane_quads

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void gemv(const float* a, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = 0.0f;
        for (int j = 0; j < n; j++)
            y[i] += a[i * n + j] * x[j];
    }
}
"""
EXAMPLE_AFTER = """\
__global__ void gemv(const float* a, const float* x, float* y, int n)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    float part = 0;
    if (i < n) {
        if (((reinterpret_cast<unsigned long long>(&a[i * n + (0)]) | reinterpret_cast<unsigned long long>(&x[(0)])) & 15) == 0) {
            const int j_end = (0) + ((n) - (0)) / 4 * 4;
            for (int j = (0) + 4 * lane; j < j_end; j += 128) {
                const float4 w0 = *reinterpret_cast<const float4*>(&a[i * n + j]);
                const float4 w1 = *reinterpret_cast<const float4*>(&x[j]);
                part += w0.x * w1.x;
                part += w0.y * w1.y;
                part += w0.z * w1.z;
                part += w0.w * w1.w;
            }
            for (int j = j_end + lane; j < (n); j += 32)
                part += a[i * n + j] * x[j];
        } else {
            for (int j = (0) + lane; j < n; j += 32)
                part += a[i * n + j] * x[j];
        }
    }
    for (int off = 16; off > 0; off /= 2)
        part += __shfl_down_sync(0xffffffffu, part, off);
    if (lane == 0 && (i < n)) {
        y[i] = 0.0f;
        y[i] += part;
    }
}
"""


@dataclass(frozen=True)
class SplitReduction:
    name: ClassVar[str] = "split-reduction"
    WHY_IT_EXISTS: ClassVar[str] = "thread-per-output row/column reductions with too few threads (the zoo's gemv_cols)"
    priority: ClassVar[int] = 25  # the built-in search's order: structural rewrites first
    canonical: ClassVar[bool] = True  # each step tried behind `normalize` too (C89 counters, unbraced guards, `= x +`)
    # splits=32 cols=16: gemv_cols 23.5 µs, gemv_colmajor 24.8 on the H200 (splits=16: 27.1 / 29.9; 64 x 8: 27.5 / 27.9;
    # 64 x 16: 24.2 / 25.0, so 16 x 16, fewer threads with longer loops, is tried after it, not yet measured)
    # quad=4 (passes/reductions/_column_quads.py): 4 outputs a thread in float4 words; 64 x 8 quads = 128 blocks of 512 threads with 16 B
    # loads (twice the bytes in flight of 32 x 16 scalar), not yet measured, so tried first and 32 x 16 right after it;
    # 128 x 4 quads: 32 x 16's 256 blocks of 512 threads with 16 B loads, a 128-deep sum of partials
    # cluster=8 (passes/reductions/_cluster_columns.py): 32 quads x 8 splits a block, 8 blocks a cluster, 8 rows' loads in flight: the hand
    # probe on the H200 gemv_cols 21.8 us, gemv_colmajor 22.0 (72% of the copy bandwidth; sm_90 only), so tried first
    space: ClassVar[tuple[str, ...]] = ("split-reduction{splits=8 cols=32 quad=4 cluster=8}",
                                        "split-reduction{splits=64 cols=8 quad=4}", "split-reduction{splits=32 cols=16}",
                                        "split-reduction{splits=128 cols=4 quad=4}", "split-reduction", "split-reduction{splits=16 cols=16}",
                                        "split-reduction{mode=splits}")
    mode: str = "auto"  # auto (from the model) | lanes | splits
    splits: int = 8  # threads along y sharing an output (splits mode)
    cols: int = 32  # splits mode: outputs (quads with quad=4) per block along x; 8 or 16 give 2-4x the blocks for as many outputs
    block: int = 256  # threads per block (lanes mode)
    lanes: int = 32  # lanes mode: threads sharing an output (4: a warp reads 8 rows of 16 floats in one float4 load each)
    quad: int = 1  # splits mode: 4 = each thread owns 4 adjacent outputs read in float4 words (passes/reductions/_column_quads.py)
    vec: int = 4  # lanes mode: 4 = each lane reads quads of the row in float4 words where they qualify (passes/reductions/_lane_quads.py)
    cluster: int = 1  # splits mode with quad=4: 2-8 blocks along y, one thread-block cluster, share each output (sm_90; _cluster_columns.py)

    def applies(self, facts: KernelFacts) -> bool | str:
        if self.mode not in {"auto", "lanes", "splits"} or self.splits not in {2, 4, 8, 16, 32, 64, 128} or self.block % 32 or \
                not 32 <= self.block <= 1024 or self.vec not in {1, 4} or self.cols not in {8, 16, 32, 4 * (self.quad == 4)} or self.cols * self.splits > 1024 \
                or self.lanes not in {4, 8, 16, 32} or self.quad not in {1, 4} or self.cluster not in {1, 2, 4, 8}:
            return ("mode must be auto, lanes or splits; splits 2 to 128 (a power of two); cols 8, 16 or 32 (4 with quad=4), cols x splits "
                    "at most 1024; block a multiple of 32 up to 1024; vec 1 or 4; lanes 4, 8, 16 or 32; quad 1 or 4; cluster 1, 2, 4 or 8")
        if self.cluster > 1 and (self.quad != 4 or self.mode == "lanes"):
            return "cluster needs quad=4 (splits mode): each thread reads its 4 outputs in float4 words"
        if facts.shared or facts.atomics:
            return "kernel uses shared memory or atomics"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        r = find_reduction_loop(source, facts.dialect, facts.name)
        if isinstance(r, str):
            return Refused(r)
        mode = self.mode if self.mode != "auto" else "lanes" if r.k_unit and not r.i_unit else "splits" if r.i_unit else ""
        if not mode:
            return Refused("the model finds neither a walk along k (for lanes) nor coalesced threads (for splits)")
        if self.cluster > 1 and mode != "splits":
            return Refused("cluster splits a column walk (coalesced threads); this loop walks along k (lanes mode)")
        if mode == "lanes" and facts.dialect == "opencl":
            return Refused("warp shuffles have no portable OpenCL 1.2 equivalent (splits mode works there)")
        if mode == "splits" and r.second is not None:
            return Refused(f"threadIdx.y holds the kernel's index {r.second}: splits mode needs it for the splits")
        if r.second is not None and self.lanes == 32:  # a 2-D grid of long sums is a contraction: the tiling passes' work
            return Refused(f"a 2-D kernel (y index {r.second}) is split only over 4-16 lanes (short rows)")
        ty = facts.param(r.target.split("[")[0].strip())
        acc_ty = ty.base_type if ty is not None else _local_type(source, r)
        n = {w: fresh(facts, source, w) for w in ("part", "lane", "off", "red", "s")}
        txt = lambda s, e: source[s:e].decode()  # noqa: E731
        stmt, at = "", r.statement[0]
        for s, e in r.target_spans:
            stmt, at = stmt + txt(at, s) + n["part"], e
        stmt += txt(at, r.statement[1])
        axis = ("get_local_id(0)", "get_local_id(1)") if facts.dialect == "opencl" else ("threadIdx.x", "threadIdx.y")
        lanes = self.lanes
        step = lanes if mode == "lanes" else self.splits
        idx = n["lane"] if mode == "lanes" else n["s"]
        loop = f"for (int {r.k} = {txt(*r.init)} + {idx}; {r.upper}; {r.k} += {step})"
        final = f"{r.target} = {r.target} + {n['part']};" if r.op == "= x +" else f"{r.target} += {n['part']};"
        tail = [*("    " + txt(s, e) for s, e, _ in r.before), f"    {final}", *("    " + txt(s, e) for s, e in r.after), "}"]
        work = [f"{acc_ty} {n['part']} = 0;", f"if ({r.inside}) {{", f"    {loop}", f"        {stmt}", "}"]
        quads = lane_quads(facts, source, r.k, txt(*r.init), r.upper, lanes, n["lane"], stmt) if mode == "lanes" and self.vec == 4 else None
        if quads is not None:
            work = [*work[:2], *(f"    {line}" for line in quads), "}"]
        if mode == "lanes":
            width = "" if lanes == 32 else f", {lanes}"  # the shuffle within each output's segment of the warp
            code = [f"const int {n['lane']} = {axis[0]} % {lanes};", *work, f"for (int {n['off']} = {lanes // 2}; {n['off']} > 0; {n['off']} /= 2)",
                    f"    {n['part']} += __shfl_down_sync(0xffffffffu, {n['part']}, {n['off']}{width});",
                    f"if ({n['lane']} == 0 && ({r.inside})) {{", *tail]
            edits = [Edit(r.value[0], r.value[1], f"({txt(*r.value)}) / {lanes}")]
            shape = (self.block, 1, 1) if r.second is None else (32, self.block // 32, 1)  # 2-D: a warp along x, y as before
            launch = LaunchChange(shape, "rows-per-warp", per_item=lanes)
        elif self.cluster > 1:
            return cluster_rewrite(facts, source, r, n, (self.cols, self.splits, self.cluster), acc_ty, stmt, tail)
        elif self.quad == 4:
            quad = column_quads(facts, source, r, n, self.splits, self.cols, acc_ty, stmt, tail)
            if quad is None:
                return Refused("quad=4 needs CUDA and a term of float elements stepping by one with the output index")
            edits = [Edit(r.mapping[0], r.rest[1], ("\n" + r.indent).join(quad))]
            return Rewrite(tuple(edits), LaunchChange((self.cols, self.splits, 1), "coarsen-x", per_item=4),
                           f"splits: {self.splits} threads along y per 4 outputs, {self.cols} quads a block, float4 words")
        else:
            space, sync = ("__local", "barrier(CLK_LOCAL_MEM_FENCE);") if facts.dialect == "opencl" else ("__shared__", "__syncthreads();")
            code = [f"{space} {acc_ty} {n['red']}[{self.splits}][{self.cols}];", f"const int {n['s']} = {axis[1]};", *work,
                    f"{n['red']}[{n['s']}][{axis[0]}] = {n['part']};", sync, f"if ({n['s']} == 0) {{",
                    f"    for (int {n['off']} = 1; {n['off']} < {self.splits}; ++{n['off']})",
                    f"        {n['part']} += {n['red']}[{n['off']}][{axis[0]}];", "}",
                    f"if ({n['s']} == 0 && ({r.inside})) {{", *tail]
            edits = []
            launch = LaunchChange((self.cols, self.splits, 1), "same-coverage")
        edits.append(Edit(r.mapping[1], r.rest[1], "\n" + r.indent + ("\n" + r.indent).join(code)))
        what = f"{lanes} lanes per output" + (", float4 words" if quads is not None else "") if mode == "lanes" else f"{self.splits} threads along y per output" + (
            f", {self.cols} outputs a block" if self.cols != 32 else "")
        return Rewrite(tuple(edits), launch, f"{mode}: {what}")


def _local_type(source: bytes, r: ReductionLoop) -> str:
    for s, e, decl in r.before:
        text = source[s:e].decode()
        if decl and r.target in text.split("=")[0]:
            return text.split("=")[0].replace(r.target, "").strip()
    return "float"
