"""A column walk split over a thread-block cluster (split-reduction's `cluster` option; CUDA, sm_90 and newer).

`splits` warps-worth of threads along y in each block and `cluster` blocks along y (one cluster, `__cluster_dims__`)
share each output: thread x of a block owns the 4 adjacent outputs of a quad, read as one float4 per row as in
passes/reductions/_column_quads.py; block b of the cluster takes the b-th of `cluster` contiguous chunks of the rows, and its
threads along y take every `splits`-th row of the chunk. The rows are walked 8 at a time, the 8 rows' words loaded before any is used (8 loads in
flight a thread; `__launch_bounds__` keeps the registers for them), then one at a time. Each block adds its threads'
partials in order through shared memory; block 0 of the cluster adds the blocks' sums, in rank order, read through
distributed shared memory, and runs the statements after the loop: one launch, no scratch buffer, no atomics, the
same result for every run. A quad whose words are not 16-byte aligned (checked at run time on the walk's first two
rows) or whose last outputs fall outside the guard takes the scalar loop for each of its outputs.
On the H200 (hand probe at 4096 x 4096): gemv_cols 21.8 us and gemv_colmajor 22.0 with a cluster of 8 blocks of
8 warps (72% of the copy bandwidth), against 23.3 / 24.7 for 32 x 16 splits through one block's shared memory.
"""
from __future__ import annotations

import os
import re

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.reduction_loop import ReductionLoop

from ..common.tree import body_node, fresh
from ._column_quads import quad_factors

ROWS = 8  # rows whose words a thread loads before it adds any
ARCH_GUARD = ("#if defined(__HIP_PLATFORM_AMD__) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900)",
              '#error "split-reduction{cluster}: thread-block clusters need CUDA on sm_90 or newer"', "#endif")


def cluster_rewrite(facts: KernelFacts, source: bytes, r: ReductionLoop, names: dict[str, str], shape: tuple[int, int, int],
                    acc_ty: str, stmt: str, tail: list[str]) -> Rewrite | Refused:
    """shape: (cols quads a block along x, splits threads along y, cluster blocks along y)."""
    why = _unsupported(facts, source, r)
    if why:
        return Refused(why)
    got = quad_factors(facts, source, r, names["part"], stmt)
    if got is None:
        return Refused("cluster needs a term of float elements stepping by one with the output index")
    cols, splits, cluster = shape
    code = _body(facts, source, r, names, shape, got, acc_ty, stmt, tail)
    decl = body_node(source, facts).parent.child_by_field_name("declarator")  # type: ignore[union-attr]
    if decl is None:
        return Refused("the kernel's declarator is not where the model expects it")
    threads = cols * splits
    attrs = f"__cluster_dims__(1, {cluster}, 1) __launch_bounds__({threads}, {max(1, 1024 // threads)}) "
    edits = (Edit(decl.start_byte, decl.start_byte, attrs), Edit(r.mapping[0], r.rest[1], ("\n" + r.indent).join(code)))
    return Rewrite(edits, LaunchChange((cols, splits, 1), f"coarsen-x-blocks-y:{cluster}", per_item=4),
                   f"cluster of {cluster} blocks x {splits} threads along y per 4 outputs, {cols} quads a block, float4 words")


def _unsupported(facts: KernelFacts, source: bytes, r: ReductionLoop) -> str:
    if facts.dialect == "opencl":
        return "thread-block clusters are CUDA's (sm_90 and newer); OpenCL has none"
    if re.search(rb"hip_runtime|__HIP|hipLaunch", source):
        return "thread-block clusters are CUDA's (sm_90 and newer); HIP has none"
    arch = os.environ.get("S2S_CUDA_ARCH", "").replace("sm_", "").replace("compute_", "").replace(".", "").strip()
    if arch.isdigit() and int(arch) < 90:
        return f"thread-block clusters need sm_90 or newer (S2S_CUDA_ARCH is sm_{arch})"
    if not re.fullmatch(rf"\s*{re.escape(r.k)}\s*<=?\s*.+", r.upper):
        return f"the loop's condition {r.upper} is not {r.k} < bound"
    if facts.launch_bounds:
        return f"the kernel declares {facts.launch_bounds}: the cluster form sets its own"
    if len(re.findall(r"\bthreadIdx\s*\.\s*x\b", source[r.value[0]:r.value[1]].decode())) != 1:
        return "the output index must read threadIdx.x once"
    return ""


def _body(facts: KernelFacts, source: bytes, r: ReductionLoop, names: dict[str, str], shape: tuple[int, int, int],
          got: tuple[str, list[tuple[str, str] | str]], acc_ty: str, stmt: str, tail: list[str]) -> list[str]:
    cols, splits, cluster = shape
    txt = lambda s, e: source[s:e].decode()  # noqa: E731
    op, factors = got
    part, v, k, s = names["part"], r.var, r.k, names["s"]
    q, ok, w, kb, lo, hi, chunk, blk, red, col, rank = (fresh(facts, source, x) for x in (f"{v}4", "quad_ok", "w", f"{k}0", f"{k}_lo", f"{k}_hi", "chunk",
                                                                                   "blk", names["red"], "col", "rank"))
    parts = [fresh(facts, source, f"{part}{c}") for c in range(4)]
    own, start, step, width = txt(r.mapping[0], r.value[0]), txt(*r.init), splits, 4 * cols
    bound = re.fullmatch(rf"\s*{re.escape(k)}\s*(<=?)\s*(.+?)\s*", r.upper)  # reduction_loop's form: k < B or k <= B
    end = "0" if bound is None else bound.group(2) if bound.group(1) == "<" else f"({bound.group(2)}) + 1"
    kty = _loop_type(source, r)
    at = lambda e, row: re.sub(rf"\b{re.escape(k)}\b", f"({row})", re.sub(rf"\b{re.escape(v)}\b", f"({q})", e))  # noqa: E731
    at_row = lambda e, row: re.sub(rf"\b{re.escape(k)}\b", f"({row})", e)  # noqa: E731
    cond = lambda row: f"{at_row(r.upper, row)} && ({row}) < {hi}"  # noqa: E731
    wide = list(dict.fromkeys(f for f in factors if isinstance(f, tuple)))
    word = {f: f"{w}{n}" for n, f in enumerate(wide)}
    first = [f"reinterpret_cast<unsigned long long>(&{a}[{at(e, row)}])" for a, e in wide for row in (start, f"({start}) + 1")]

    fk = fresh(facts, source, "f")
    near = {f: f"{fk}{n}" for n, f in enumerate(factors) if isinstance(f, str) and re.search(rf"\b{re.escape(k)}\b", f)}

    def rows(n: int) -> list[str]:  # n rows from kb on: every word and factor of k loaded, then the adds row by row
        row = lambda u: f"{kb} + {u * step}"  # noqa: E731
        loads = [f"const float4 {word[f]}_{u} = *reinterpret_cast<const float4*>(&{f[0]}[{at(f[1], row(u))}]);" for u in range(n) for f in wide]
        loads += [f"const auto {near[f]}_{u} = {at_row(f, row(u))};" for u in range(n) for f in near]
        term = lambda u, x: " * ".join(f"{word[f]}_{u}.{x}" if isinstance(f, tuple) else f"{near[f]}_{u}" if f in near else f  # noqa: E731
                                       for f in factors)
        return loads + [" ".join(f"{parts[c]} {op} {term(u, x)};" for c, x in enumerate("xyzw")) for u in range(n)]

    tid = f"threadIdx.y * {cols} + threadIdx.x"
    mine = re.sub(r"\bthreadIdx\s*\.\s*x\b", f"({col} / 4)", txt(*r.value))
    quad_decl = re.sub(rf"\b{re.escape(v)}\b", q, own, count=1)
    code = [f"{quad_decl}({txt(*r.value)}) * 4;", *ARCH_GUARD,
            f"__shared__ {acc_ty} {red}[{splits}][{width}];", f"__shared__ {acc_ty} {blk}[{width}];",
            f"const int {s} = threadIdx.y;", f"const {kty} {chunk} = (({end}) - ({start}) + {cluster - 1}) / {cluster};",
            f"const {kty} {lo} = {start} + static_cast<{kty}>(blockIdx.y) * {chunk}, {hi} = {lo} + {chunk};  // this block's rows",
            f"{acc_ty} {', '.join(f'{p} = 0' for p in parts)};", f"bool {ok} = (({' | '.join(first)}) & 15) == 0;"]
    code += [f"{{ {own}{q} + {c}; {ok} = {ok} && ({r.inside}); }}" for c in range(4)]
    code += [f"if ({ok}) {{", f"    {kty} {kb} = {lo} + {s};", f"    for (; {cond(f'{kb} + {(ROWS - 1) * step}')}; {kb} += {ROWS * step}) {{",
             *(f"        {x}" for x in rows(ROWS)), "    }", f"    for (; {cond(kb)}; {kb} += {step}) {{", *(f"        {x}" for x in rows(1)),
             "    }", "} else {"]
    for c in range(4):
        code += [f"    {{ {own}{q} + {c};", f"        {acc_ty} {part} = 0;", f"        if ({r.inside})",
                 f"            for ({kty} {k} = {lo} + {s}; {cond(k)}; {k} += {step})", f"                {stmt.strip()}",
                 f"        {parts[c]} = {part};", "    }"]
    code += ["}", *(f"{red}[{s}][4 * threadIdx.x + {c}] = {parts[c]};" for c in range(4)), "__syncthreads();",
             f"for (int {col} = {tid}; {col} < {width}; {col} += {cols * splits}) {{  // the block's threads in order",
             f"    {acc_ty} {part} = {red}[0][{col}];", f"    for (int {rank} = 1; {rank} < {splits}; ++{rank})",
             f"        {part} += {red}[{rank}][{col}];", f"    {blk}[{col}] = {part};", "}",
             "__cluster_barrier_arrive();", "__cluster_barrier_wait();",
             "if (blockIdx.y == 0) {  // the cluster's blocks in rank order, through distributed shared memory",
             f"    for (int {col} = {tid}; {col} < {width}; {col} += {cols * splits}) {{", f"        {acc_ty} {part} = 0;",
             f"        for (int {rank} = 0; {rank} < {cluster}; ++{rank})",
             f"            {part} += static_cast<{acc_ty}*>(__cluster_map_shared_rank({blk}, {rank}))[{col}];",
             f"        {own}4 * ({mine}) + {col} % 4;", f"        if ({r.inside}) {{", *(f"        {x}" for x in tail), "    }", "}",
             "__cluster_barrier_arrive();  // no block leaves while block 0 reads its shared memory", "__cluster_barrier_wait();"]
    return code


def _loop_type(source: bytes, r: ReductionLoop) -> str:
    """The loop variable's declared type (`int` in `for (int k = 0; ...)`)."""
    head = source[max(0, r.init[0] - 200):r.init[0]].decode("utf-8", "replace")
    m = re.search(rf"for\s*\(\s*([\w\s:]+?)\s+{re.escape(r.k)}\s*=\s*$", head)
    return " ".join(m.group(1).split()) if m else "int"
