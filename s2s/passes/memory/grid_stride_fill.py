"""grid-stride-fill: a kernel with per-block work around one element per thread loops over its elements instead, on a
grid that just fills the device, so the per-block work runs once per resident block rather than once per 256 elements.

The shape: block-level statements (clearing a shared histogram, a barrier), then `int i = GID; if (i < n) S`, then more
block-level statements (a barrier, flushing the block's bins with global atomics). histo_shared launches 262144 blocks of
256 threads, each clearing and flushing 64 bins: 16.8M global atomics onto 64 addresses for 64 MiB of input, and the
H200 measured it at 1.3% of the copy bandwidth, latency-limited. Here `if (i < n) S` becomes
`for (i = GID; i < n; i += STRIDE) S` and the grid holds the target device's thread slots (132 x 2048 on an H200).

Refused unless the block-level code is the same in every block (no blockIdx, gridDim, get_group_id, get_global_id
outside the index), S has no barrier, return or jump, S changes no variable declared outside it (elements stay
independent), and the index is not used after the guard. What S adds up (atomics) is then added in another grouping.
vec=N (4, 8 or 16 bytes; CUDA/HIP): every array that S only reads at [i] comes in as N-byte words unpacked in
registers (passes/memory/_vector_words.py): histo_shared's one byte per load moved 32 B per warp instruction, 512 B with
uint4 words. It also applies to a kernel that already loops grid-stride (`for (i = GID; i < n; i += STRIDE) S`; its
grid then fills the device too, unless the block-level code depends on the block); it refuses arrays S writes and
element sizes that do not divide N.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.thread_index import GLOBAL_ID, GLOBAL_STRIDE, compared_bound, single_declaration, squeezed
from ..common.tree import body_node, statements, text
from ._vector_words import vectorized

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void histo(const unsigned char* data, int* bins, int n)
{
    __shared__ int local[64];
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&local[data[i] % 64], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        atomicAdd(&bins[b], local[b]);
}
"""
EXAMPLE_AFTER = """\
__global__ void histo(const unsigned char* data, int* bins, int n)
{
    __shared__ int local[64];
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i] % 64], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < 64; b += blockDim.x)
        atomicAdd(&bins[b], local[b]);
}
"""
_BLOCK_DEPENDENT = re.compile(r"\bblockIdx\b|\bgridDim\b|\bget_group_id\b|\bget_num_groups\b|\bget_global_id\b|\bget_global_size\b")
_JUMPS = re.compile(r"__syncthreads|\bbarrier\s*\(|__syncwarp|\breturn\b|\bbreak\b|\bcontinue\b|\bgoto\b")
_ASSIGNED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*(\[[^;]*?\])?\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?:\+\+|--)\s*([A-Za-z_]\w*)|"
                       r"([A-Za-z_]\w*)\s*(?:\+\+|--)")


@dataclass(frozen=True)
class GridStrideFill:
    name: ClassVar[str] = "grid-stride-fill"
    WHY_IT_EXISTS: ClassVar[str] = "per-block setup and flush around one element a thread (the zoo's histo_shared)"
    priority: ClassVar[int] = 55  # the built-in search's order: structural rewrites first
    # measured on the H200 at e1c49fb: histo_shared 61% of the copy bandwidth with vec=16 and 32 copies, 56% without them;
    # on 1024-thread blocks (2 an SM) 75% against 69% on 256 (histogram probe, 2026-12-01)
    space: ClassVar[tuple[str, ...]] = ("grid-stride-fill{vec=16 words=4},launch-config{block=1024},shared-histogram{copies=32}",
                                        "grid-stride-fill{vec=16 words=4},shared-histogram{copies=32}",
                                        "grid-stride-fill{vec=16},shared-histogram{copies=32}", "grid-stride-fill{vec=16 words=4}",
                                        "grid-stride-fill")
    vec: int = 0  # bytes per load of each array read at [i] (4, 8 or 16); 0 keeps the element's own loads
    words: int = 1  # with vec: words of each array a thread loads, a grid stride apart, before it uses any (1, 2 or 4)

    def applies(self, facts: KernelFacts) -> bool | str:
        if not facts.shared and not facts.atomics:
            return "no shared memory or atomics: no per-block work to amortize (vector-elementwise takes plain streams)"
        if facts.dims != 1 or not facts.var_for("x"):
            return "needs a 1-D thread mapping along x"
        if self.vec not in (0, 4, 8, 16):
            return f"vec={self.vec}: the load width must be 4, 8 or 16 bytes (0: the element's own loads)"
        if self.words not in (1, 2, 4) or self.words > 1 and not self.vec:
            return f"words={self.words}: 1, 2 or 4 words in flight per thread, with vec=N"
        if self.vec and facts.dialect == "opencl":
            return "vec is CUDA/HIP only (OpenCL would need vloadN)"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        cl = facts.dialect == "opencl"
        stmts = statements(body_node(source, facts))
        found = _guarded(source, facts, stmts) or _looped(source, facts, stmts)
        if found is None:
            return Refused("no `int i = GLOBAL_INDEX; if (i < BOUND) S` nor `for (int i = GLOBAL_INDEX; i < BOUND; i += "
                           "GLOBAL_SIZE) S` among the body's statements")
        if isinstance(found, Refused):
            return found
        first, last, (ty, var, gid), bound, then = found
        looped = first.type == "for_statement"
        if looped and not self.vec:
            return Refused("already a grid-stride loop (vec=N moves N bytes per load through it)")
        if re.search(r"[\[=]|\+\+|--|\w\s*\(", bound) or re.search(rf"\b{var}\b", bound):
            return Refused(f"the bound `{bound}` is not a plain expression of the parameters")
        element = text(source, then)
        whole = text(source, body_node(source, facts))
        rest = whole.replace(text(source, first), " ").replace(text(source, last), " ")
        if not looped and _BLOCK_DEPENDENT.search(rest):
            return Refused("the block-level code depends on which block runs it or on how many there are")
        if not looped and re.search(rf"\b{var}\b", rest):
            return Refused(f"`{var}` is used outside its guard")
        if _JUMPS.search(element) or _BLOCK_DEPENDENT.search(element):
            return Refused("a barrier, return or jump (or a block index) in the element's code")
        lone = [a.target for a in facts.atomics if then.start_byte <= a.start < then.end_byte
                and re.fullmatch(r"&?\s*(\w+)(?:\s*\[\s*0\s*\])?", a.target.strip())]
        if any((p := facts.param(re.sub(r"\W|\[0\]", "", t))) is not None and p.pointer for t in lone):
            return Refused("every element adds into one global address: atomic-accumulate sums in registers first")
        declared = set(re.findall(r"\b(?:(?:const|unsigned|signed|long|short|int|float|double|char|bool|auto|size_t)\s+)+"
                                  r"([A-Za-z_]\w*)", element))
        for m in _ASSIGNED.finditer(element):
            name, index = m.group(1) or m.group(3) or m.group(4), m.group(2) or ""
            p = facts.param(name)
            if name in declared and not index or (p is not None and p.pointer and re.search(rf"\b{var}\b", index)):
                continue  # a local of the element, or the element's own place in a global array
            return Refused(f"`{name}{index}` is written in the element's code and outlives it (the one element per "
                           "thread that the block-level code reads would become the thread's last; atomics are fine)")
        stride = "get_global_size(0)" if cl else "blockDim.x * gridDim.x"
        ind = source[source.rfind(b"\n", 0, first.start_byte) + 1:first.start_byte].decode()
        scalar = f"for ({ty} {var} = {gid}; {var} < ({bound.strip()}); {var} += {stride})"
        scalar += f" {element}" if then.type == "compound_statement" else f"\n{ind}    {element}"
        if self.vec:
            vector = vectorized(source, facts, self.vec, (ty, var, gid), bound.strip(), element, stride, ind, self.words)
            if isinstance(vector, Refused):
                return vector
            new, note = vector, f"{self.vec}-byte loads in a grid-stride loop"
        else:
            new, note = scalar, "a grid-stride loop over the elements"
        keep = looped and bool(_BLOCK_DEPENDENT.search(rest))  # per-block results: the grid is part of the output
        launch = None if keep else LaunchChange(None, f"extent:{facts.device.thread_slots}")
        return Rewrite((Edit(first.start_byte, last.end_byte, new),), launch,
                       note + ("" if keep else " on a grid that fills the device"))


_Found = tuple[Node, Node, tuple[str, str, str], str, Node]


def _guarded(source: bytes, facts: KernelFacts, stmts: list[Node]) -> _Found | Refused | None:
    """`T i = GID; if (i < BOUND) S`: (declaration, guard, (T, i, GID), BOUND, S)."""
    cl = facts.dialect == "opencl"
    k = next((j for j, s in enumerate(stmts[:-1]) if s.type == "declaration" and (d := single_declaration(source, s)) is not None
              and d[2] is not None and GLOBAL_ID["opencl" if cl else "cuda"].match(squeezed(text(source, d[2])))), None)
    if k is None:
        return None
    d = single_declaration(source, stmts[k])
    assert d is not None and d[2] is not None
    var, guard = d[1], stmts[k + 1]
    cond = guard.child_by_field_name("condition") if guard.type == "if_statement" else None
    then = guard.child_by_field_name("consequence") if cond is not None else None
    bound = compared_bound(source, cond, var)
    if then is None or bound is None or guard.child_by_field_name("alternative") is not None:
        return Refused(f"`{var}` is not followed by its guard `if ({var} < BOUND) ...`")
    return stmts[k], guard, (d[0], var, text(source, d[2])), bound, then


def _looped(source: bytes, facts: KernelFacts, stmts: list[Node]) -> _Found | None:
    """`for (T i = GID; i < BOUND; i += GLOBAL_SIZE) S` at the top level of the body."""
    dialect = "opencl" if facts.dialect == "opencl" else "cuda"
    for s in stmts:
        init, cond, step, then = (s.child_by_field_name(f) for f in ("initializer", "condition", "update", "body"))
        if s.type != "for_statement" or init is None or init.type != "declaration" or step is None or then is None:
            continue
        d = single_declaration(source, init)
        if d is None or d[2] is None or not GLOBAL_ID[dialect].match(squeezed(text(source, d[2]))):
            continue
        bound = compared_bound(source, cond, d[1])
        m = re.fullmatch(rf"{re.escape(d[1])}\+=(.+)", squeezed(text(source, step)))
        if bound is not None and m and GLOBAL_STRIDE[dialect].match(m.group(1)):
            return s, s, (d[0], d[1], text(source, d[2])), bound, then
    return None
