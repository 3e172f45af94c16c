"""shared-histogram: `atomicAdd(&hist[bin], v)` into global memory becomes a per-block histogram in shared memory.

Each block zeroes `__shared__ T hist_s[max_bins]` (only the first min(nbins, max_bins) entries are used, where
nbins is the integer parameter named like `*bins*` or a constant named like `BINS`, else max_bins: the histogram's
length need not be known, a key read from data `atomicAdd(&count[key[i]], 1)` works alike), adds into it, and flushes
each non-zero bin with one global atomicAdd. A bin index outside the shared range falls back to the original global
atomic, so the result is the same for any nbins and any index (a bin is flushed only where some thread added to it,
so no index the original did not touch is written). Top-level `if (..) return;` guards become guarded
blocks so that every thread reaches both barriers; any other return is refused. Works for any block shape.
copies=N (a power of two up to 32): N sub-histograms, bin-major (`bin * N + tid % N`), summed at the flush: with 32,
the lanes of a warp never share a bank; a kernel that already has its own shared histogram gets it spread the same way
(passes/reductions/_histogram_copies.py). Refused where the copies would exceed 48 KiB of shared memory.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import body_node, fresh, indent_of, node_at, statements, text
from ._histogram_copies import spread

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void histogram(const int* keys, unsigned int* hist, int n, int nbins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&hist[keys[i] % nbins], 1u);
}
"""
EXAMPLE_AFTER = """\
__global__ void histogram(const int* keys, unsigned int* hist, int n, int nbins)
{
    __shared__ unsigned int hist_s[1024];
    const int nsh = nbins < 1024 ? nbins : 1024;
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthr = blockDim.x * blockDim.y * blockDim.z;
    for (int k = tid; k < nsh; k += nthr) hist_s[k] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (!(i >= n)) {
        { const long long bin = (keys[i] % nbins); if (bin >= 0 && bin < nsh) atomicAdd(&hist_s[bin], 1u); else atomicAdd(&hist[bin], 1u); }
    }
    __syncthreads();
    for (int k = tid; k < nsh; k += nthr)
        if (hist_s[k] != 0) atomicAdd(&hist[k], hist_s[k]);
}
"""
_TYPES = {"int", "unsigned", "unsigned int", "float", "double", "unsigned long long", "unsigned long long int"}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b|\*")
_TARGET = re.compile(r"^&\s*(\w+)\s*\[(.+)\]$|^(\w+)\s*\+\s*(.+)$", re.S)


@dataclass(frozen=True)
class SharedHistogram:
    name: ClassVar[str] = "shared-histogram"
    WHY_IT_EXISTS: ClassVar[str] = "histograms by global atomicAdd on data-dependent bins: per-block shared bins"
    priority: ClassVar[int] = 70  # the built-in search's order: structural rewrites first
    # with 16-byte words on a grid that fills the device (a grid-stride loop covers any grid): histo_global's 256 bins
    # of floats; 16 copies (16 KiB) keep 8 blocks of 256 per SM, one wave
    space: ClassVar[tuple[str, ...]] = ("shared-histogram{copies=16},grid-stride-fill{vec=16 words=4}",
                                        "shared-histogram,grid-stride-fill{vec=16 words=4}", "shared-histogram",
                                        "shared-histogram{copies=32}")
    max_bins: int = 1024
    copies: int = 1  # sub-histograms, bin-major (bin * copies + thread % copies): a warp's adds spread over the banks

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.dialect == "opencl":
            return "CUDA/HIP only"
        if not facts.atomics or any(a.function != "atomicAdd" for a in facts.atomics):
            return "needs atomicAdd calls (and no other atomics)"
        if not 1 <= self.max_bins <= 8192:
            return "max_bins must be between 1 and 8192"
        if self.copies not in (1, 2, 4, 8, 16, 32):
            return f"copies={self.copies}: a power of two from 1 to 32"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        body_text = source[facts.body_start : facts.body_end].decode("utf-8", "replace")
        if facts.shared and self.copies > 1:
            return spread(source, facts, self.copies, _TYPES)
        if facts.shared or re.search(r"__syncthreads|__shared__|HIP_DYNAMIC_SHARED|\bgoto\b", body_text):
            return Refused("the kernel already uses shared memory or barriers (copies=N spreads a shared histogram)")
        targets = [_TARGET.match(a.target.strip()) for a in facts.atomics]
        arrays = {(m.group(1) or m.group(3)) for m in targets if m}
        if None in targets or len(arrays) != 1:
            return Refused("every atomicAdd must go to `&hist[bin]` of one array")
        hist = arrays.pop()
        p = facts.param(hist)
        ty = " ".join(_QUALIFIERS.sub(" ", p.type).split()) if p is not None and p.pointer else ""
        if ty not in _TYPES:
            return Refused(f"{hist} must be an int, unsigned, float or double pointer parameter")
        if len(re.findall(rf"(?<![\w.])(?<!->){hist}\b", body_text)) != len(facts.atomics):
            return Refused(f"{hist} is used other than as the target of the atomics")
        names = {w: fresh(facts, source, w) for w in ("hist_s", "nsh", "tid", "nthr", "k", "bin", "cp", "c", "sum")}
        calls: dict[int, tuple[int, str]] = {}
        for a, m in zip(facts.atomics, targets):
            assert m is not None
            call = node_at(source, facts, a.start, a.end, "call_expression")
            args = call.child_by_field_name("arguments") if call is not None else None
            stmt = call.parent if call is not None else None
            if stmt is None or stmt.type != "expression_statement" or args is None or len(args.named_children) != 2:
                return Refused("the atomic's result is used")
            value, index = text(source, args.named_children[1]), (m.group(2) or m.group(4)).strip()
            calls[stmt.start_byte] = (stmt.end_byte, _privatized(names, hist, index, value, self.copies))
        stmts = statements(body_node(source, facts))
        guards = [s for s in stmts if s.type == "if_statement" and s.child_by_field_name("alternative") is None
                  and text(source, s.child_by_field_name("consequence")).strip("{} \n\t;") == "return"]
        if len(re.findall(r"\breturn\b", body_text)) != len(guards):
            return Refused("a return that is not a top-level guard `if (..) return;`: threads would skip the barriers")
        bins = next((q.name for q in facts.params if not q.pointer and re.search(r"bins|^n_?bin$", q.name.lower())
                     and q.base_type in {"int", "unsigned", "unsigned int", "long", "size_t"}), "")
        bins = bins or next(iter(sorted(set(re.findall(r"\b[A-Z_]*BINS\b|\bNBIN\b", body_text)) - set(facts.locals))), "")
        bins = bins or str(self.max_bins)  # a length nothing names: bins 0..max_bins-1 shared, the rest stay global atomics
        if (facts.param(bins) is not None or bins.isdigit()) and \
                self.max_bins * self.copies * (8 if "long" in ty or ty == "double" else 4) > 49152:
            return Refused(f"{self.copies} copies of {self.max_bins} bins exceed 48 KiB of shared memory (lower max_bins)")
        return Rewrite(tuple(self._edits(source, facts, stmts, guards, calls, names, ty, hist, bins)), None,
                       f"per-block shared histogram of {hist} (up to {self.max_bins} bins)")

    def _edits(self, source: bytes, facts: KernelFacts, stmts: list[Node], guards: list[Node], calls: dict[int, tuple[int, str]],
               names: dict[str, str], ty: str, hist: str, bins: str) -> list[Edit]:
        mx, n = self.max_bins, names
        pad = indent_of(source, stmts[0].start_byte) if stmts else "    "
        nsh = str(mx) if bins == str(mx) else f"{bins} < {mx} ? {bins} : {mx}"
        cc = self.copies
        size = str(mx) if cc == 1 else f"{mx} * {cc}" if facts.param(bins) is not None else f"(({nsh}) * {cc})"
        head = [f"__shared__ {ty} {n['hist_s']}[{size}];", f"const int {n['nsh']} = {nsh};",
                f"const int {n['tid']} = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);",
                f"const int {n['nthr']} = blockDim.x * blockDim.y * blockDim.z;",
                *([f"const int {n['cp']} = {n['tid']} & {cc - 1};"] if cc > 1 else []),
                f"for (int {n['k']} = {n['tid']}; {n['k']} < {n['nsh']}{f' * {cc}' if cc > 1 else ''}; {n['k']} += {n['nthr']}) "
                f"{n['hist_s']}[{n['k']}] = 0;",
                "__syncthreads();"]
        tail = ["__syncthreads();", f"for (int {n['k']} = {n['tid']}; {n['k']} < {n['nsh']}; {n['k']} += {n['nthr']})"]
        if cc == 1:
            tail.append(f"    if ({n['hist_s']}[{n['k']}] != 0) atomicAdd(&{hist}[{n['k']}], {n['hist_s']}[{n['k']}]);")
        else:  # each thread its bin's copies, starting at a rotated copy so that neighbouring bins read different banks
            tail += ["{", f"    {ty} {n['sum']} = 0;",
                     f"    for (int {n['c']} = 0; {n['c']} < {cc}; ++{n['c']}) "
                     f"{n['sum']} += {n['hist_s']}[{n['k']} * {cc} + (({n['c']} + {n['k']}) & {cc - 1})];",
                     f"    if ({n['sum']} != 0) atomicAdd(&{hist}[{n['k']}], {n['sum']});", "}"]
        first = stmts[0].start_byte if stmts else facts.body_end - 1
        edits = [Edit.insert(first, "".join(line + "\n" + pad for line in head))]
        if not guards:
            edits += [Edit(start, end, new) for start, (end, new) in calls.items()]
            edits.append(Edit.insert(stmts[-1].end_byte if stmts else first, "".join("\n" + pad + line for line in tail)))
            return edits
        # from the first guard on, the rest of the body becomes nested guarded blocks, indented one level each
        g0, end = guards[0].start_byte, stmts[-1].end_byte
        pieces: list[str] = []
        cursor, depth = g0, 0
        for start in sorted([g.start_byte for g in guards] + [c for c in calls if c > g0]):
            pieces.append(_shift(source[cursor:start], depth))
            guard = next((g for g in guards if g.start_byte == start), None)
            if guard is not None:
                pieces.append(f"if (!{text(source, guard.child_by_field_name('condition')).strip()}) {{")
                cursor, depth = guard.end_byte, depth + 1
                while source[cursor:cursor + 1] in b" \t" and cursor < end:  # no blank line after the opening brace
                    cursor += 1
                if source[cursor:cursor + 2] == b"\n\n":
                    cursor += 1
            else:
                pieces.append(calls[start][1])
                cursor = calls[start][0]
        pieces.append(_shift(source[cursor:end], depth))
        edits += [Edit(start, e, new) for start, (e, new) in calls.items() if start < g0]
        closing = "".join(f"\n{pad}{'    ' * d}}}" for d in reversed(range(depth)))
        edits.append(Edit(g0, end, "".join(pieces) + closing + "".join("\n" + pad + line for line in tail)))
        return edits


def _shift(chunk: bytes, depth: int) -> str:
    return re.sub(r"\n(?=[^\n])", "\n" + "    " * depth, chunk.decode("utf-8", "replace"))


def _privatized(n: dict[str, str], hist: str, index: str, value: str, copies: int) -> str:
    at = n['bin'] if copies == 1 else f"{n['bin']} * {copies} + {n['cp']}"
    return (f"{{ const long long {n['bin']} = ({index}); if ({n['bin']} >= 0 && {n['bin']} < {n['nsh']}) "
            f"atomicAdd(&{n['hist_s']}[{at}], {value}); else atomicAdd(&{hist}[{n['bin']}], {value}); }}")
