"""smem-allpairs: every thread's `for (j = 0; j < N; ++j) { .. pos[j] .. }` reads tiles of pos staged in shared memory.

Shape: a 1-D mapping `i`, at most one guard `if (i >= n) return;`, and a top-level loop whose body reads
some read-only array only as `P[j]` (the same element for every thread). Each block loads TILE elements of
P cooperatively, waits, runs the original body over them (j ascending, so every thread adds in the same
order as before) and waits again; with unroll=U a full tile runs a loop of TILE trips under `#pragma unroll U`
(no `j < n && j - t < TILE` test a pair), the guarded loop only the last, partial tile. Idle threads (i >= n) take
part in the loads and barriers: the guard becomes `live`, they compute on the valid index n - 1 with no side effects
(nothing before the end of the loop may write memory) and everything after the loop runs only `if (live)`. Correct
for any block shape; with a guard the launch becomes 1-D blocks of TILE threads (one load each), else it is kept."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import THREAD_BUILTIN, KernelFacts, Loop, idents

from ..common.guards import guard_bound, uniform_names, wrapper, wrapper_bound
from ..common.tree import body_node, fresh, indent_of, statements, text

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void potential(const float* x, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xi = x[i];
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (j == i) continue;
        sum += 1.0f / fabsf(xi - x[j]);
    }
    phi[i] = sum;
}
"""
EXAMPLE_AFTER = """\
__global__ void potential(const float* x, float* phi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = !(i >= n);
    if (!(0 < (n))) return;
    if (!live) i = (n) - 1;
    float xi = x[i];
    float sum = 0.0f;
    __shared__ float x_s[256];
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthr = blockDim.x * blockDim.y * blockDim.z;
    for (int t = 0; t < n; t += 256) {
        for (int l = tid; l < 256 && l < n - t; l += nthr) x_s[l] = x[t + l];
        __syncthreads();
        for (int j = t; j < n && j - t < 256; ++j) {
            if (j == i) continue;
            sum += 1.0f / fabsf(xi - x_s[j - t]);
        }
        __syncthreads();
    }
    if (live) {
        phi[i] = sum;
    }
}
"""
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b|\*")
_INIT = re.compile(r"^((?:unsigned\s+|signed\s+)?(?:int|long|long long|size_t|unsigned))\s+(\w+)\s*=\s*0\s*;?$")


@dataclass(frozen=True)
class SmemAllpairs:
    name: ClassVar[str] = "smem-allpairs"
    WHY_IT_EXISTS: ClassVar[str] = "all-pairs loops reading the same P[j] in every thread (n-body, Coulomb sums)"
    priority: ClassVar[int] = 80  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("smem-allpairs{tile=256}", "smem-allpairs{tile=256 unroll=8}", "smem-allpairs{tile=128}",
                                        "smem-allpairs{tile=256 unroll=8},fast-math,hoist-invariants",
                                        "smem-allpairs{tile=512},allpairs-bodies{bodies=2},allpairs-lanes{lanes=8},loop-unroll{factor=4}")
    tile: int = 256
    unroll: int = 0  # > 0: full tiles run a loop of `tile` trips under `#pragma unroll N`, the guarded loop only the last

    def applies(self, facts: KernelFacts) -> bool | str:
        if self.tile < 32 or self.tile > 1024 or self.tile % 32 or not 0 <= self.unroll <= self.tile:
            return "tile must be a multiple of 32 from 32 to 1024, unroll from 0 (no full-tile loop) to the tile"
        if facts.dialect == "opencl":
            return "CUDA/HIP only"
        if facts.dims != 1 or not facts.var_for("x"):
            return "needs a 1-D thread mapping on x"
        if not facts.loops or facts.shared:
            return "needs a loop and no shared memory"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        body = source[facts.body_start : facts.body_end].decode("utf-8", "replace")
        if re.search(r"__syncthreads|__shared__|HIP_DYNAMIC_SHARED|\bgoto\b", body):
            return Refused("the kernel already uses shared memory or barriers")
        i, top = facts.var_for("x"), statements(body_node(source, facts))
        uniform = uniform_names(facts)
        wrap = wrapper(source, top, i)  # `if (i < n) { ... }` as the last statement: the loop may sit inside it
        stmts = statements(wrap.child_by_field_name("consequence")) if wrap is not None else top  # type: ignore[arg-type]
        found = next(((k, lp, arrs) for k, s in enumerate(stmts) for lp in facts.loops if lp.start == s.start_byte
                      for arrs in [_tiled_arrays(source, facts, lp, uniform)] if isinstance(arrs, list)), None)
        if found is None:
            reasons = [r for lp in facts.loops if lp.depth == 1 for r in [_tiled_arrays(source, facts, lp, uniform)] if isinstance(r, str)]
            return Refused(reasons[0] if reasons else "needs a loop `for (int j = 0; j < n; ++j)` in the kernel body or in a "
                           "last guard `if (i < n) { ... }` without else")
        at, loop, arrays = found
        guards = [] if wrap is not None else \
            [k for k, s in enumerate(stmts) if s.type == "if_statement" and "return" in text(source, s.child_by_field_name("consequence"))]
        returns = len(re.findall(r"\breturn\b", source[facts.body_start : loop.end].decode("utf-8", "replace")))
        if len(guards) > 1 or returns != len(guards) or (guards and guards[0] > at):
            return Refused("at most one early return, the guard `if (i >= n) return;` before the loop")
        g = guards[0] if guards else -1
        inner = wrap.child_by_field_name("consequence") if wrap is not None else None
        from_ = stmts[g].end_byte if guards else inner.start_byte + 1 if inner is not None else facts.body_start
        region = source[from_ : loop.body_end].decode("utf-8", "replace")
        why = _side_effect_free(facts, region, from_, loop.body_end)
        if why:
            return Refused(why)
        head = top[: top.index(wrap)] if wrap is not None else stmts[: max(g, 0)]
        pre = {v for s in head for v in idents(text(source, s))} & set(facts.thread_vars)
        if (guards or wrap is not None) and (THREAD_BUILTIN.search(region) or idents(region) & (pre - {i})):
            return Refused(f"after the guard, the thread index may be used only through {i}")
        edits: list[Edit] = []
        live = fresh(facts, source, "live")
        if guards or wrap is not None:
            guard = wrap if wrap is not None else stmts[g]
            bound = wrapper_bound(source, guard, i) if wrap is not None else guard_bound(source, guard, i)
            decl = next((s for s in head if s.type == "declaration" and i in idents(text(source, s.child_by_field_name("declarator")))), None)
            if bound is None or not idents(bound) <= uniform or decl is None or re.search(r"\bconst\b", text(source, decl)):
                return Refused(f"the guard must be `if ({i} >= n) return;` or `if ({i} < n) {{ ... }}` with n the same for every "
                               f"thread and {i} a non-const local")
            if len(re.findall(rf"(?<![.\w])(?<!->){i}\s*(?:[-+*/%&|^]?=(?!=)|\+\+|--)|(?:\+\+|--)\s*{i}\b", body)) != 1:
                return Refused(f"{i} is assigned after its declaration")
            pad = indent_of(source, guard.start_byte)
            cond = text(source, guard.child_by_field_name("condition")).strip()
            header = (f"const bool {live} = {cond if wrap is not None else '!' + cond};\n"
                      f"{pad}if (!(0 < ({bound}))) return;\n{pad}if (!{live}) {i} = ({bound}) - 1;")
            if wrap is not None:  # the block stays a block, entered by every thread
                assert inner is not None
                edits.append(Edit(guard.start_byte, inner.start_byte + 1, header + f"\n{pad}{{"))
            else:
                edits.append(Edit(guard.start_byte, guard.end_byte, header))
            if at + 1 < len(stmts):
                ipad = indent_of(source, loop.start)
                post = source[loop.end : stmts[-1].end_byte].decode("utf-8", "replace")
                edits.append(Edit(loop.end, stmts[-1].end_byte, f"\n{ipad}if ({live}) {{" + _shift(post) + f"\n{ipad}}}"))
        edits.append(Edit(loop.start, loop.end, self._tiled(source, facts, loop, arrays)))
        # without a guard, more threads (same-coverage rounds up) would read past the end: keep the launch
        launch = None if facts.launch_bounds or not (guards or wrap is not None) else LaunchChange((self.tile, 1, 1), "same-coverage")
        return Rewrite(tuple(edits), launch, f"{self.tile}-element shared tiles of {', '.join(arrays)}")

    def _tiled(self, source: bytes, facts: KernelFacts, loop: Loop, arrays: list[str]) -> str:
        ty, j, n, tl = _INIT.match(loop.init.strip()).group(1), loop.var, loop.bound, self.tile  # type: ignore[union-attr]
        t, ld, tid, nthr = (fresh(facts, source, w) for w in ("t", "l", "tid", "nthr"))
        shared = {a: fresh(facts, source, f"{a}_s") for a in arrays}
        body = source[loop.body_start : loop.body_end].decode("utf-8", "replace")
        for a, s in shared.items():
            body = re.sub(rf"\b{a}\s*\[\s*{j}\s*\]", f"{s}[{j} - {t}]", body)
        p = {a: facts.param(a) for a in arrays}
        lines = [*(f"__shared__ {' '.join(_QUALIFIERS.sub(' ', q.type).split())} {shared[a]}[{tl}];" for a, q in p.items() if q),
                 f"const int {tid} = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);",
                 f"const int {nthr} = blockDim.x * blockDim.y * blockDim.z;",
                 f"for ({ty} {t} = 0; {t} < {n}; {t} += {tl}) {{",
                 *(f"    for (int {ld} = {tid}; {ld} < {tl} && {ld} < {n} - {t}; {ld} += {nthr}) {s}[{ld}] = {a}[{t} + {ld}];"
                   for a, s in shared.items()),
                 "    __syncthreads();",
                 *(self._pairs(loop, body, ty, t) if self.unroll else
                   [f"    for ({ty} {j} = {t}; {j} < {n} && {j} - {t} < {tl}; ++{j}) " + _shift(body).lstrip()]),
                 "    __syncthreads();", "}"]
        pad = indent_of(source, loop.start)
        return ("\n" + pad).join(lines)

    def _pairs(self, loop: Loop, body: str, ty: str, t: str) -> list[str]:
        """A full tile's loop (a trip count of TILE known at compile time, unrolled; j ascending as before), else the
        last tile's."""
        j, n, tl, inner = loop.var, loop.bound, self.tile, _shift(body, 2).strip()
        return [f"    if ({n} - {t} >= {tl}) {{", f"        #pragma unroll {self.unroll}",
                f"        for ({ty} {j} = {t}; {j} < {t} + {tl}; ++{j}) {inner}", "    } else {",
                f"        for ({ty} {j} = {t}; {j} < {n}; ++{j}) {inner}", "    }"]


def _tiled_arrays(source: bytes, facts: KernelFacts, lp: Loop, uniform: set[str]) -> list[str] | str:
    """The read-only arrays the loop body reads at [j] (their other reads, such as [i], stay global), or why the loop
    does not fit."""
    m = _INIT.match(lp.init.strip())
    j = lp.var
    if lp.kind != "for_statement" or m is None or not re.fullmatch(rf"{j}\s*<\s*.+", lp.cond.strip()) \
            or lp.step.replace(" ", "") not in {f"++{j}", f"{j}++", f"{j}+=1"}:
        return "the loop must be `for (int j = 0; j < n; ++j)`"
    if not idents(lp.bound) <= uniform:
        return "the loop bound must use only non-pointer parameters (the same for every thread)"
    body = source[lp.body_start : lp.body_end].decode("utf-8", "replace")
    if re.search(r"\b(break|return|goto)\b", body) or re.search(rf"(?<![.\w])(?<!->){j}\s*(?:[-+*/%&|^]?=(?!=)|\+\+|--)|(?:\+\+|--)\s*{j}\b", body):
        return f"the loop body must not break, return or change {j}"
    inside = [s for s in facts.subscripts if lp.body_start <= s.start < lp.body_end]
    out = []
    for p in facts.params:
        uses = [s for s in inside if s.array == p.name]
        if p.pointer and not p.written and any(s.index.strip() == j for s in uses) and len(_uses(p.name, body)) == len(uses):
            out.append(p.name)
    return out or f"no read-only array is read at [{j}] in the loop"


def _side_effect_free(facts: KernelFacts, region: str, start: int, end: int) -> str:
    """Why code that idle threads now run (guard to end of loop) could have an effect, "" if it cannot."""
    if any(start <= a.start < end for a in facts.atomics):
        return "atomics before the end of the loop"
    for p in facts.params:
        reads = [s for s in facts.subscripts if s.array == p.name and start <= s.start < end]
        if p.pointer and (any(s.write for s in reads) or len(_uses(p.name, region)) != len(reads)):
            return f"{p.name} is written or passed on before the end of the loop"
    return ""


def _shift(chunk: str, levels: int = 1) -> str:
    return re.sub(r"\n(?=[^\n])", "\n" + "    " * levels, chunk)


def _uses(name: str, chunk: str) -> list[str]:
    """Occurrences of the variable `name` (not of a member `.name` or `->name`)."""
    return re.findall(rf"(?<![\w.])(?<!->){name}\b", chunk)
