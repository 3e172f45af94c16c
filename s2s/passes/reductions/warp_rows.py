"""warp-rows: a thread-per-row dot product becomes a warp (or sub-warp of `lanes` threads) per row.

The lanes of a row stride over the loop together (consecutive lanes touch consecutive elements, so a
row walk becomes coalesced), reduce with `__shfl_down_sync`, and lane 0 runs what followed the loop.
The same shape covers the column walk of a transposed (column-major) layout, and a loop inside a row guard
`if (row < n) { ... }`. A running sum (`out[..c..] = run; run += e(c);`, exclusive or inclusive) becomes a warp scan:
the lanes take consecutive c, scan their terms with `__shfl_up_sync`, store, and carry the chunk's total.
A reduction whose arrays step by one element reads quads of the row in float4 words where the row starts 16-byte
aligned (passes/reductions/_lane_quads.py; `vec=1` keeps one element per lane and trip); a gathered factor `x[cols[k]]` reads
cols in int4 words. A sum that enters the loop with a value (`acc = out[i]`, a bias) keeps it in lane 0 only; `-=` too.
A row walked by several loops, or by one that is not sums alone (softmax: max, sum, normalize; layer norm; row minima
and maxima; stores to the row's elements), splits every loop among the lanes and combines each reduction with a
`__shfl_xor_sync` butterfly so every lane holds it for what follows (passes/reductions/_row_loops.py, passes/reductions/_row_walks.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import THREAD_BUILTIN, KernelFacts

from ..common.guards import loop_block
from ..common.tree import body_node, fresh, indent_of, statements, text
from ._lane_quads import lane_quads
from ._row_scalars import COUNT_UP, declares, starts_at_zero
from ._row_walks import row_walks
from ._warp_scan import scan_loop, scan_shape, value_of

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void matvec(const float* A, const float* x, float* y, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) {
        sum += A[row * n + j] * x[j];
    }
    y[row] = sum;
}
"""
EXAMPLE_AFTER = """\
__global__ void matvec(const float* A, const float* x, float* y, int n)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    const unsigned mask = 0xffffffffu;
    if (row >= n) return;
    float sum = 0.0f;
    if (((reinterpret_cast<unsigned long long>(&A[row * n + (0)]) | reinterpret_cast<unsigned long long>(&x[(0)])) & 15) == 0) {
        const int j_end = (0) + ((n) - (0)) / 4 * 4;
        for (int j = (0) + 4 * lane; j < j_end; j += 128) {
            const float4 w0 = *reinterpret_cast<const float4*>(&A[row * n + j]);
            const float4 w1 = *reinterpret_cast<const float4*>(&x[j]);
            sum += w0.x * w1.x;
            sum += w0.y * w1.y;
            sum += w0.z * w1.z;
            sum += w0.w * w1.w;
        }
        for (int j = j_end + lane; j < (n); j += 32)
            sum += A[row * n + j] * x[j];
    } else {
        for (int j = (0) + lane; j < n; j += 32)
            sum += A[row * n + j] * x[j];
    }
    for (int off = 32 / 2; off > 0; off /= 2)
        sum += __shfl_down_sync(mask, sum, off, 32);
    if (lane != 0) return;
    y[row] = sum;
}
"""


@dataclass(frozen=True)
class WarpRows:
    name: ClassVar[str] = "warp-rows"
    priority: ClassVar[int] = 30  # the built-in search's order: structural rewrites first
    canonical: ClassVar[bool] = True  # each step tried behind `normalize` too: `out[i] += ...` in the loop reads as a sum
    # lanes=4: rows of a few dozen elements (CSR SpMV, 32 a row: 4 lanes reading int4/float4 words 83 us, 8 lanes 99 us,
    # 16 lanes 170 us on the zoo matrix: issue 15, spmv probe on the H200)
    space: ClassVar[tuple[str, ...]] = ("warp-rows{lanes=32}", "warp-rows{lanes=16}", "warp-rows{lanes=32 unroll=4}",
                                        "warp-rows{lanes=4}")
    lanes: int = 32
    block: int = 256
    unroll: int = 1  # a scan's chunks whose loads one trip issues together (running sums only)
    vec: int = 4  # a reduction's lanes read quads of the row in float4 words where they qualify (passes/reductions/_lane_quads.py)

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.dialect == "opencl":
            return "warp shuffles have no portable OpenCL 1.2 equivalent"
        if self.lanes not in {2, 4, 8, 16, 32} or self.block % 32 or self.unroll not in {1, 2, 4, 8} or self.vec not in {1, 4}:
            return "lanes must be a power of two up to 32, block a multiple of 32, unroll 1, 2, 4 or 8 and vec 1 or 4"
        if facts.dims != 1 or facts.var_for("x") == "":
            return "needs a 1-D thread mapping (i = blockIdx.x * blockDim.x + threadIdx.x)"
        if not facts.loops:
            return "needs a loop over the row"
        if any(lp.kind != "for_statement" for lp in facts.loops if lp.innermost):
            return "needs for loops over the row (the innermost loops; loops around them are the row's own control)"
        if facts.atomics or facts.shared:
            return "kernel uses atomics or shared memory"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        if len(facts.loops) > 1:
            return self._walks(source, facts)
        body, loop, var, lanes = body_node(source, facts), facts.loops[0], facts.var_for("x"), self.lanes
        top = statements(body)
        stmts, guard = loop_block(source, top, loop.start, var)
        at = next((i for i, s in enumerate(stmts) if s.start_byte == loop.start), -1)
        before = [s for s in top if s.end_byte <= (guard.start_byte if guard is not None else loop.start)]
        mapping = next((s for s in before if declares(source, s, var)), None)
        if at < 0 or mapping is None:
            return Refused("the loop must be a statement of the kernel body (or of one guard `if (row < n) { ... }`) "
                           "after the thread-index declaration")
        for s in [*top, *stmts] if guard is not None else top:
            if s is guard:
                continue
            if s is not mapping and (THREAD_BUILTIN.search(text(source, s)) or "__syncthreads" in text(source, s)):
                return Refused("thread indices are used outside the row mapping")
        if any(s.write and s.start < loop.start for s in facts.subscripts):
            return Refused("global memory is written before the loop (every lane would write it)")
        accs = _accumulators(source, stmts[at], loop.var)
        scan = scan_shape(source, stmts[at], loop.var) if isinstance(accs, str) else None
        if isinstance(accs, str) and isinstance(scan, tuple):
            accs = [scan[0]]
        if isinstance(accs, str):  # not sums alone: a walk of maxima, stores to the row, ... (passes/reductions/_row_walks.py)
            walks = self._walks(source, facts)
            if isinstance(walks, Rewrite):
                return walks
            why = accs if not isinstance(scan, str) or "scalar" not in accs else f"{accs}; {scan}"
            return Refused(f"{why}; as a row walk: {walks.reason}")
        if not all(any(declares(source, s, a) for s in [*before, *stmts[:at]]) for a in accs):
            return Refused("the accumulators must be declared in the kernel body before the loop")
        step = COUNT_UP.match(loop.step)
        if not step or next(g for g in step.groups()[1:] if g) != loop.var or not loop.bound or "<" not in loop.cond:
            return Refused("the loop must count up by one: for (j = s; j < n; ++j)")
        loop_node = stmts[at]
        init = loop_node.child_by_field_name("initializer")
        value = value_of(init)
        step_node = loop_node.child_by_field_name("update")
        decl = value_of(mapping)
        if value is None or decl is None or step_node is None:
            return Refused("unexpected loop header or mapping declaration")
        lane, mask = fresh(facts, source, "lane"), fresh(facts, source, "mask")
        off = fresh(facts, source, "off")
        pad = indent_of(source, mapping.start_byte)
        mask_value = "0xffffffffu" if lanes == 32 else f"0x{(1 << lanes) - 1:x}u << (threadIdx.x % 32u / {lanes} * {lanes})"
        lpad = indent_of(source, loop.start)
        reduce = "".join(f"\n{lpad}for (int {off} = {lanes} / 2; {off} > 0; {off} /= 2)\n{lpad}    "
                         f"{a} += __shfl_down_sync({mask}, {a}, {off}, {lanes});" for a in accs)
        if isinstance(scan, tuple):
            acc_decl = next(x for x in [*before, *stmts[:at]] if declares(source, x, scan[0]))
            scanned = scan_loop(source, facts, loop_node, scan, text(source, acc_decl.child_by_field_name("type")), lanes, lane, mask, off,
                                self.unroll)
            if isinstance(scanned, Refused):
                return scanned
            scan_edits = (Edit(decl.start_byte, decl.end_byte, f"({text(source, decl)}) / {lanes}"),
                          Edit(mapping.end_byte, mapping.end_byte, f"\n{pad}const int {lane} = threadIdx.x % {lanes};"
                                                                   f"\n{pad}const unsigned {mask} = {mask_value};"),
                          Edit(loop.start, loop.end, scanned + f"\n{lpad}if ({lane} != 0) return;"))
            return Rewrite(scan_edits, LaunchChange((self.block, 1, 1), "rows-per-warp", per_item=lanes),
                           f"{lanes} lanes per row of {var}, shuffle scan of {scan[0]}" + (f", {self.unroll} chunks a trip" if self.unroll > 1 else ""))
        if self.unroll > 1:
            return Refused("unroll batches the loads of a running sum's chunks: this loop is a reduction (use lanes alone)")
        edits: tuple[Edit, ...] = (
            Edit(decl.start_byte, decl.end_byte, f"({text(source, decl)}) / {lanes}"),
            Edit(mapping.end_byte, mapping.end_byte, f"\n{pad}const int {lane} = threadIdx.x % {lanes};"
                                                     f"\n{pad}const unsigned {mask} = {mask_value};"),
            Edit(value.end_byte, value.end_byte, f" + {lane}"),
            Edit(step_node.start_byte, step_node.end_byte, f"{loop.var} += {lanes}"),
            Edit(loop.end, loop.end, f"{reduce}\n{lpad}if ({lane} != 0) return;"),
        )
        started = [a for a in accs if not starts_at_zero(source, [*before, *stmts[:at]], a)]
        if started:  # `acc = out[i]` (normalize's register), `acc = bias`: only lane 0 brings the first value (before a #pragma)
            at_byte = p.start_byte if (p := loop_node.prev_named_sibling) is not None and p.type == "preproc_call" else loop.start
            edits += (Edit(at_byte, at_byte, f"if ({lane} != 0) {{ " + " ".join(f"{a} = 0;" for a in started) + f" }}\n{lpad}"),)
        launch = LaunchChange((self.block, 1, 1), "rows-per-warp", per_item=lanes)
        one = _loop_items(loop_node)
        quads = lane_quads(facts, source, loop.var, text(source, value), loop.cond, lanes, lane, text(source, one[0])) \
            if self.vec == 4 and len(one) == 1 else None
        if quads is not None:
            edits = (*edits[:2], *edits[5:], Edit(loop.start, loop.end, f"\n{lpad}".join(quads) + f"{reduce}\n{lpad}if ({lane} != 0) return;"))
        return Rewrite(edits, launch, f"{lanes} lanes per row of {var}" + (", float4 words" if quads is not None else "") +
                       f", shuffle reduction of {', '.join(accs)}")

    def _walks(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        if self.unroll > 1:
            return Refused("unroll batches the loads of a running sum's chunks: these row loops are walks (use lanes alone)")
        return row_walks(source, facts, self.lanes, self.block)


def _loop_items(loop: Node) -> list[Node]:
    body = loop.child_by_field_name("body")
    return statements(body) if body is not None and body.type == "compound_statement" else [body] if body else []


def _accumulators(source: bytes, loop: Node, var: str) -> list[str] | str:
    """Names of the scalars `s += e` (or `s = s + e`) that make up the whole loop body."""
    items = _loop_items(loop)
    names: list[str] = []
    for s in items:
        e = s.named_children[0] if s.type == "expression_statement" and s.named_children else None
        left = e.child_by_field_name("left") if e is not None and e.type == "assignment_expression" else None
        if e is None or left is None or left.type != "identifier":
            return "the loop body must consist of scalar accumulations (sum += ...)"
        op, right = text(source, e.child_by_field_name("operator")), e.child_by_field_name("right")
        name = text(source, left)
        plus = right is not None and right.type == "binary_expression" and text(source, right.child_by_field_name("left")) == name \
            and text(source, right.child_by_field_name("operator")) in {"+", "-"}
        if op not in {"+=", "-="} and not (op == "=" and plus) or name == var:
            return "the loop body must consist of sum accumulations (+=, -=)"
        if name not in names:
            names.append(name)
    return names or "empty loop body"
