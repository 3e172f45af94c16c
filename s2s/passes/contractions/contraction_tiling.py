"""contraction-tiling: any contraction over k (from the kernel model) becomes a shared-memory tiled one with `rows` outputs per thread.

Whatever the operand layouts (A[i][k]·B[k][j], A[i][k]·A[j][k], A[k][i]·B[k][j]) and wherever it accumulates (a local,
or global memory scaled first: `c[i*N+j] *= beta; for (k) c[i*N+j] += alpha*a*b`): each block stages a tile x tile
slice of both operands through shared memory, loading along whichever index the model says is unit-stride (so the
loads coalesce for either layout), zero-padded past the sizes. Every output still adds its terms in ascending k,
starting from the accumulator's value after the statements before the loop, so the result is the original's,
bit for bit; the guard is kept per output and every thread reaches every barrier.

A kernel without a guard (its launch covers the outputs exactly: Parboil's sgemm) keeps its launch (passes/contractions/_cover.py).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from s2s.lang.contraction import Contraction, find_contraction
from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import fresh
from ._cover import builtins, cover, linear

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void syrk(int n, int m, float alpha, float beta, const float* a, float* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) {
        c[i * n + j] *= beta;
        for (int k = 0; k < m; k++)
            c[i * n + j] += alpha * a[i * m + k] * a[j * m + k];
    }
}
"""
EXAMPLE_AFTER = """\
__global__ void syrk(int n, int m, float alpha, float beta, const float* a, float* c)
{
    __shared__ float As[32][33];
    __shared__ float Bs[32][33];
    float acc[4];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
    for (int r = 0; r < 4; ++r) {
        int i = row0 + ty + r * 8;
        int j = col0 + tx;
        acc[r] = 0;
        if (i < n && j < n) {
            c[i * n + j] *= beta;
            acc[r] = c[i * n + j];
        }
    }
    for (int t = 0; t < m; t += 32) {
        for (int e = ty; e < 32; e += 8) {
            { int i = row0 + e; int k = t + tx; As[e][tx] = (i < n && k < m) ? a[i * m + k] : (float)0; }
            { int j = col0 + e; int k = t + tx; Bs[tx][e] = (k < m && j < n) ? a[j * m + k] : (float)0; }
        }
        __syncthreads();
        if (t + 32 <= m) {
            #pragma unroll
            for (int kk = 0; kk < 32; ++kk)
                for (int r = 0; r < 4; ++r)
                    acc[r] += alpha * As[ty + r * 8][kk] * Bs[kk][tx];
        } else {
            for (int kk = 0; kk < m - t; ++kk)
                for (int r = 0; r < 4; ++r)
                    acc[r] += alpha * As[ty + r * 8][kk] * Bs[kk][tx];
        }
        __syncthreads();
    }
    for (int r = 0; r < 4; ++r) {
        int i = row0 + ty + r * 8;
        int j = col0 + tx;
        if (i < n && j < n) {
            c[i * n + j] = acc[r];
        }
    }
}
"""
_SIZES = {"float": 4, "double": 8, "int": 4, "half": 2, "__half": 2}


@dataclass(frozen=True)
class ContractionTiling:
    name: ClassVar[str] = "contraction-tiling"
    WHY_IT_EXISTS: ClassVar[str] = "any contraction over k (GEMM-like, any layout) through shared tiles (Parboil's sgemm)"
    priority: ClassVar[int] = 15  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("contraction-tiling{tile=32 rows=4}", "contraction-tiling{tile=64 rows=8}",
                                        "contraction-tiling{tile=16 rows=1}", "contraction-tiling{tile=32 rows=8}")
    tile: int = 32
    rows: int = 4

    def applies(self, facts: KernelFacts) -> bool | str:
        if self.tile not in {8, 16, 32, 64} or self.rows not in {1, 2, 4, 8} or self.rows > self.tile:
            return "tile must be 8, 16, 32 or 64 and rows 1, 2, 4 or 8 (at most the tile)"
        if self.tile * self.tile // self.rows > 1024:
            return "at most 1024 threads per block (tile x tile / rows)"
        if facts.shared or facts.atomics:
            return "kernel already uses shared memory or atomics"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        c = find_contraction(source, facts.dialect, facts.name)
        if isinstance(c, str):
            return Refused(c)
        tys = [(facts.param(o.array).base_type if facts.param(o.array) else "") for o in c.a + c.b]  # type: ignore[union-attr]
        held = facts.param(c.target_array)
        acc_ty = c.target_decl.strip() or (held.base_type if held is not None else "")
        if not all(tys) or not acc_ty:
            return Refused("the operands and the accumulator must have known element types")
        if sum(_SIZES.get(t, 8) for t in tys) * self.tile * (self.tile + 1) > 48 * 1024:
            return Refused(f"{len(tys)} {self.tile}x{self.tile + 1} tiles of {'/'.join(tys)} exceed 48 KiB of shared memory")
        names = {w: fresh(facts, source, w) for w in ("acc", "tx", "ty", "row0", "col0", "t", "e", "kk", "r")}
        for side, ops in (("As", c.a), ("Bs", c.b)):
            for i in range(len(ops)):
                names[f"{side}{i}"] = fresh(facts, source, side if i == 0 else f"{side}{i + 1}")
        cl = facts.dialect == "opencl"
        if not c.guarded:
            for w in ("rows", "cols", "tiles", "tile"):
                names[w] = fresh(facts, source, w)
            b = builtins(cl)
            c = replace(c, row_bound=names["rows"], col_bound=names["cols"],
                        inside=f"{c.row} < {names['rows']} && {c.col} < {names['cols']}")
        code = self._code(source, c, names, tys, acc_ty, cl)
        if not c.guarded:
            at = next(i for i, line in enumerate(code) if line.startswith(f"const int {names['tx']}"))
            place = f"const int {names['tx']} = {linear(b)} % {self.tile}, {names['ty']} = {linear(b)} / {self.tile};"
            code = cover(source, c, names, (code[:at], place, code[at + 2:]), self.tile * (self.tile // self.rows), self.tile, b)
        edit = Edit(c.start, c.rest[1], ("\n" + c.indent).join(code))
        launch = LaunchChange((self.tile, self.tile // self.rows, 1), "tile-coarse", per_item=self.tile) if c.guarded else None
        sides = ", ".join([f"{o.text} along {c.k if o.k_fast else c.row}" for o in c.a] + [f"{o.text} along {c.k if o.k_fast else c.col}" for o in c.b])
        return Rewrite((edit,), launch, f"{self.tile}x{self.tile} tiles over {c.k}, {self.rows} rows per thread: {sides}")

    def _code(self, source: bytes, c: Contraction, n: dict[str, str], tys: list[str], acc_ty: str, cl: bool) -> list[str]:
        T, R, BY = self.tile, self.rows, self.tile // self.rows
        space, sync = ("__local", "barrier(CLK_LOCAL_MEM_FENCE);") if cl else ("__shared__", "__syncthreads();")
        lx, ly, gx, gy = ("get_local_id(0)", "get_local_id(1)", "get_group_id(0)", "get_group_id(1)") if cl else \
            ("threadIdx.x", "threadIdx.y", "blockIdx.x", "blockIdx.y")
        txt = lambda s, e: source[s:e].decode()  # noqa: E731
        r, acc = n["r"], f"{n['acc']}[{n['r']}]"
        ro, co = c.offsets
        each = [f"for (int {r} = 0; {r} < {R}; ++{r}) {{", f"    int {c.row} = {n['row0']} + {n['ty']} + {r} * {BY}{ro};",
                f"    int {c.col} = {n['col0']} + {n['tx']}{co};"]
        before = [txt(s, e) for s, e, _ in c.before]
        redeclared = [txt(s, e) for s, e, decl in c.before if decl and not (c.target_decl and c.target in txt(s, e).split("=")[0])]
        # the accumulation with the accumulator in a register and the operands from the tiles
        swaps = sorted([(s, e, acc) for s, e in c.target_spans]
                       + [(s, e, f"{n[f'As{i}']}[{n['ty']} + {r} * {BY}][{n['kk']}]") for i, o in enumerate(c.a) for s, e in o.spans]
                       + [(s, e, f"{n[f'Bs{i}']}[{n['kk']}][{n['tx']}]") for i, o in enumerate(c.b) for s, e in o.spans])
        stmt, at = "", c.statement[0]
        for s, e, new in swaps:
            stmt, at = stmt + txt(at, s) + new, e
        stmt += txt(at, c.statement[1])
        inner = [f"        for (int {r} = 0; {r} < {R}; ++{r})", f"            {stmt}"]
        loads, decls = [], []
        for i, o in enumerate(c.a):  # each operand loaded along its unit-stride index: the loads coalesce in either layout
            a_i, a_k = (n["e"], n["tx"]) if o.k_fast else (n["tx"], n["e"])
            decls.append(f"{space} {tys[i]} {n[f'As{i}']}[{T}][{T + 1}];")
            loads.append(f"        {{ int {c.row} = {n['row0']} + {a_i}{ro}; int {c.k} = {n['t']} + {a_k}; {n[f'As{i}']}[{a_i}][{a_k}] = "
                         f"({c.row} < {c.row_bound} && {c.k} < {c.upper}) ? {o.text} : ({tys[i]})0; }}")
        for i, o in enumerate(c.b):
            b_k, b_j = (n["tx"], n["e"]) if o.k_fast else (n["e"], n["tx"])
            decls.append(f"{space} {tys[len(c.a) + i]} {n[f'Bs{i}']}[{T}][{T + 1}];")
            loads.append(f"        {{ int {c.col} = {n['col0']} + {b_j}{co}; int {c.k} = {n['t']} + {b_k}; {n[f'Bs{i}']}[{b_k}][{b_j}] = "
                         f"({c.k} < {c.upper} && {c.col} < {c.col_bound}) ? {o.text} : ({tys[len(c.a) + i]})0; }}")
        return [
            *decls, f"{acc_ty} {n['acc']}[{R}];",
            f"const int {n['tx']} = {lx}, {n['ty']} = {ly};", f"const int {n['row0']} = {gy} * {T}, {n['col0']} = {gx} * {T};",
            *each, f"    {acc} = 0;", f"    if ({c.inside}) {{", *("        " + s for s in before), f"        {acc} = {c.target};", "    }", "}",
            f"for (int {n['t']} = {c.lower}; {n['t']} < {c.upper}; {n['t']} += {T}) {{",
            f"    for (int {n['e']} = {n['ty']}; {n['e']} < {T}; {n['e']} += {BY}) {{",
            *loads,
            "    }", f"    {sync}", f"    if ({n['t']} + {T} <= {c.upper}) {{", "        #pragma unroll",
            f"        for (int {n['kk']} = 0; {n['kk']} < {T}; ++{n['kk']})", *("    " + s for s in inner),
            "    } else {", f"        for (int {n['kk']} = 0; {n['kk']} < {c.upper} - {n['t']}; ++{n['kk']})", *("    " + s for s in inner),
            "    }", f"    {sync}", "}",
            *each, f"    if ({c.inside}) {{", *("        " + s for s in redeclared), f"        {c.target_decl}{c.target} = {acc};",
            *("        " + txt(s, e) for s, e in c.after), "    }", "}",
        ]

