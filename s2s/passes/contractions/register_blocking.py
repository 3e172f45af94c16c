"""register-blocking: the naive matrix product becomes a shared-memory tiled product with register micro-tiles.

Shape as smem-tiling: global-index `col` (x) and `row` (y), a guard `if (row >= M || col >= N) return;`, statements
that set ACC, `for (int k = 0; k < K; ++k) ACC += A[f(row, k)] * B[g(k, col)];`, statements that use ACC. A block of
(tile/rx, tile/ry) threads computes a tile x tile block of C, each thread ry x rx outputs strided by the block, in
registers that start from ACC's value after the statements before the loop (run per output in a prologue), so each
output still sums in ascending k. No early return: every thread reaches every barrier; writes keep the guard's bounds.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.contraction import Contraction, find_contraction
from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import THREAD_BUILTIN, KernelFacts, idents

from ..common.tree import body_node, fresh, indent_of, statements, text
from ._cover import builtins, cover, linear, product_inputs
from .smem_tiling import acc_declaration, contraction_product, guard_bounds, index_type, is_guard

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void matmul(const float* A, const float* B, float* C, int n)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= n) return;
    float sum = 0.0f;
    for (int k = 0; k < n; ++k)
        sum += A[row * n + k] * B[k * n + col];
    C[row * n + col] = sum;
}
"""
EXAMPLE_AFTER = """\
__global__ void matmul(const float* A, const float* B, float* C, int n)
{
    __shared__ float As[64][17];
    __shared__ float Bs[16][64];
    float acc[16];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
    #pragma unroll
    for (int m = 0; m < 16; ++m) {
        int row = row0 + ty + m / 4 * 16;
        int col = col0 + tx + m % 4 * 16;
        acc[m] = 0;
        if (row < n && col < n) {
            float sum = 0.0f;
            acc[m] = sum;
        }
    }
    for (int t = 0; t < n; t += 16) {
        for (int e = tid; e < 64 * 16; e += 256) {
            int row = row0 + e / 16;
            int k = t + e % 16;
            As[e / 16][e % 16] = (row < n && k < n) ? A[row * n + k] : (float)0;
        }
        for (int e = tid; e < 16 * 64; e += 256) {
            int k = t + e / 64;
            int col = col0 + e % 64;
            Bs[e / 64][e % 64] = (k < n && col < n) ? B[k * n + col] : (float)0;
        }
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < 16; ++kk) {
            float ra[4], rb[4];
            #pragma unroll
            for (int m = 0; m < 4; ++m) ra[m] = As[ty + m * 16][kk];
            #pragma unroll
            for (int m = 0; m < 4; ++m) rb[m] = Bs[kk][tx + m * 16];
            #pragma unroll
            for (int m = 0; m < 16; ++m) acc[m] += ra[m / 4] * rb[m % 4];
        }
        __syncthreads();
    }
    #pragma unroll
    for (int m = 0; m < 16; ++m) {
        int row = row0 + ty + m / 4 * 16;
        int col = col0 + tx + m % 4 * 16;
        if (row < n && col < n) {
            float sum = acc[m];
            C[row * n + col] = sum;
        }
    }
}
"""
_JUMP = re.compile(r"\b(return|break|continue|goto)\b")


@dataclass(frozen=True)
class RegisterBlocking:
    name: ClassVar[str] = "register-blocking"
    WHY_IT_EXISTS: ClassVar[str] = "the textbook naive GEMM with a 2-D mapping and a guard, with register micro-tiles"
    priority: ClassVar[int] = 20  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("register-blocking{tile=64 rx=4 ry=4}", "register-blocking{tile=64 rx=8 ry=8 tk=8}",
                                        "register-blocking{tile=32 rx=2 ry=4}", "register-blocking{tile=128 rx=8 ry=8 tk=8}")
    tile: int = 64
    rx: int = 4
    ry: int = 4
    tk: int = 16

    def applies(self, facts: KernelFacts) -> bool | str:
        if self.tile not in {16, 32, 64, 128} or self.tk not in {4, 8, 16, 32}:
            return "tile must be 16, 32, 64 or 128 and tk 4, 8, 16 or 32"
        if self.rx not in {1, 2, 4, 8} or self.ry not in {1, 2, 4, 8} or not 32 <= (self.tile // self.rx) * (self.tile // self.ry) <= 1024:
            return "rx and ry must be 1, 2, 4 or 8, with 32 to 1024 threads per block"
        if facts.dims != 2 or not facts.var_for("x") or not facts.var_for("y"):
            return "needs a 2-D thread mapping (col from x, row from y)"
        if len(facts.loops) != 1 or facts.loops[0].kind != "for_statement" or facts.shared or facts.atomics:
            return "needs exactly one for loop and no shared memory or atomics"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        c = find_contraction(source, facts.dialect, facts.name)
        if not isinstance(c, str) and not c.guarded:  # Parboil's sgemm: the launch is kept (passes/contractions/_cover.py)
            return self._unguarded(source, facts, c)
        row, col, loop = facts.var_for("y"), facts.var_for("x"), facts.loops[0]
        stmts = statements(body_node(source, facts))
        at = next((i for i, s in enumerate(stmts) if s.start_byte == loop.start), -1)
        g = next((i for i, s in enumerate(stmts[:max(at, 0)]) if is_guard(source, s)), -1)
        if at < 0 or g < 0:
            return Refused("needs a guard `if (row >= M || col >= N) return;` before a top-level loop")
        types = {v: ty for s in stmts[:g] for v, axis in ((row, "y"), (col, "x")) if (ty := index_type(source, s, v, axis))}
        if g != 2 or len(types) != 2:
            return Refused(f"only the global-index declarations of {row} and {col} may precede the guard")
        cond = text(source, stmts[g].child_by_field_name("condition")).strip("() ")
        bounds = guard_bounds(cond)
        if row not in bounds or col not in bounds or cond.count("||") != 1:
            return Refused(f"the guard must bound exactly {row} and {col}")
        if not re.fullmatch(r"int\s+\w+\s*=\s*0\s*;", loop.init) or loop.step.replace(" ", "") not in {f"++{loop.var}", f"{loop.var}++"} \
                or not re.fullmatch(rf"{loop.var}\s*<\s*.+", loop.cond):
            return Refused("the loop must be `for (int k = 0; k < K; ++k)`")
        shape = contraction_product(source, stmts[at], loop.var, row, col, set(facts.locals))
        if isinstance(shape, str):
            return Refused(shape)
        acc, a_ref, b_ref, a_name = shape
        a_p, b_p = facts.param(a_name), facts.param(b_ref.split("[")[0].strip())
        if a_p is None or b_p is None or a_p.written or b_p.written:
            return Refused("both factors must be kernel parameters the kernel never writes")
        before, after, local = stmts[g + 1 : at], stmts[at + 1 :], set(facts.locals)
        if idents(loop.bound + bounds[row] + bounds[col]) & local:
            return Refused("the loop bound and the guard bounds must not use local variables")
        if any(THREAD_BUILTIN.search(text(source, s)) or _JUMP.search(text(source, s)) for s in before + after):
            return Refused("the statements around the loop must not use thread indices or jump (return, break, ...)")
        decl = acc_declaration(source, before, acc)
        if isinstance(decl, Refused):
            return decl
        if decl == "" and (idents(acc) & local) - {row, col}:
            return Refused("the accumulator's index must use only the row, the column and parameters")
        acc_ty = decl.strip() or (facts.param(acc.split("[")[0].strip()) or a_p).base_type
        names = {w: fresh(facts, source, w) for w in ("As", "Bs", "acc", "tx", "ty", "tid", "row0", "col0", "t", "e", "kk", "m", "ra", "rb")}
        cl = facts.dialect == "opencl"
        code = self._code(names, row, col, loop.var, types, bounds, loop.bound, a_ref, b_ref, (a_p.base_type, b_p.base_type, acc_ty),
                          acc, decl, [text(source, s) for s in before], [text(source, s) for s in after], cl)
        pad = indent_of(source, stmts[0].start_byte)
        edit = Edit(stmts[0].start_byte, stmts[-1].end_byte, ("\n" + pad).join(code))
        launch = LaunchChange((self.tile // self.rx, self.tile // self.ry, 1), "tile-coarse", per_item=self.tile)
        return Rewrite((edit,), launch, f"{self.tile}x{self.tile} block tiles, {self.ry}x{self.rx} outputs per thread")

    def _unguarded(self, source: bytes, facts: KernelFacts, c: Contraction) -> Rewrite | Refused:
        got = product_inputs(source, facts, c)
        if isinstance(got, str):
            return Refused(got)
        types, tys, before, after = got
        n = {w: fresh(facts, source, w) for w in ("As", "Bs", "acc", "tx", "ty", "tid", "row0", "col0", "t", "e", "kk", "m", "ra", "rb",
                                                  "rows", "cols", "tiles", "tile")}
        b, bx = builtins(facts.dialect == "opencl"), self.tile // self.rx
        code = self._code(n, c.row, c.col, c.k, types, {c.row: n["rows"], c.col: n["cols"]}, c.upper, c.a[0].text, c.b[0].text, tys,
                          c.target, c.target_decl, before, after, facts.dialect == "opencl", (c.a[0].k_fast, c.b[0].k_fast))
        place = f"const int {n['tx']} = {linear(b)} % {bx}, {n['ty']} = {linear(b)} / {bx}, {n['tid']} = {linear(b)};"
        code = cover(source, c, n, (code[:3], place, code[5:]), bx * (self.tile // self.ry), self.tile, b)
        note = f"{self.tile}x{self.tile} tiles, {self.ry}x{self.rx} outputs per thread, at the kernel's own launch"
        return Rewrite((Edit(c.start, c.rest[1], ("\n" + c.indent).join(code)),), None, note)

    def _code(self, n: dict[str, str], row: str, col: str, k: str, types: dict[str, str], bounds: dict[str, str], K: str,
              a_ref: str, b_ref: str, tys: tuple[str, str, str], acc: str, decl: str, before: list[str], after: list[str],
              cl: bool, fast: tuple[bool, bool] = (True, False)) -> list[str]:
        tile, tk, bx, by, rx, ry, m = self.tile, self.tk, self.tile // self.rx, self.tile // self.ry, self.rx, self.ry, n["m"]
        e = n["e"]  # the loads run along each operand's unit-stride index (`fast`: k is it, for A and for B)
        ai, ak = (f"{e} / {tk}", f"{e} % {tk}") if fast[0] else (f"{e} % {tile}", f"{e} / {tile}")
        bk, bj = (f"{e} % {tk}", f"{e} / {tk}") if fast[1] else (f"{e} / {tile}", f"{e} % {tile}")
        space, sync = ("__local", "barrier(CLK_LOCAL_MEM_FENCE);") if cl else ("__shared__", "__syncthreads();")
        lx, ly, gx, gy = ("get_local_id(0)", "get_local_id(1)", "get_group_id(0)", "get_group_id(1)") if cl else \
            ("threadIdx.x", "threadIdx.y", "blockIdx.x", "blockIdx.y")
        a_ty, b_ty, acc_ty = tys
        reg, unroll, threads = f"{n['acc']}[{m}]", "#pragma unroll", bx * by
        inside = f"if ({row} < {bounds[row]} && {col} < {bounds[col]}) {{"
        each = [unroll, f"for (int {m} = 0; {m} < {ry * rx}; ++{m}) {{",  # each output of the micro-tile, fully unrolled
                f"    {types[row]} {row} = {n['row0']} + {n['ty']} + {m} / {rx} * {by};",
                f"    {types[col]} {col} = {n['col0']} + {n['tx']} + {m} % {rx} * {bx};"]
        return [
            f"{space} {a_ty} {n['As']}[{tile}][{tk + 1}];", f"{space} {b_ty} {n['Bs']}[{tk}][{tile}];",
            f"{acc_ty} {n['acc']}[{ry * rx}];",
            f"const int {n['tx']} = {lx}, {n['ty']} = {ly}, {n['tid']} = {n['ty']} * {bx} + {n['tx']};",
            f"const int {n['row0']} = {gy} * {tile}, {n['col0']} = {gx} * {tile};",
            *each, f"    {reg} = 0;", f"    {inside}", *("        " + s for s in before), f"        {reg} = {acc};", "    }", "}",
            f"for (int {n['t']} = 0; {n['t']} < {K}; {n['t']} += {tk}) {{",
            f"    for (int {n['e']} = {n['tid']}; {n['e']} < {tile} * {tk}; {n['e']} += {threads}) {{",
            f"        {types[row]} {row} = {n['row0']} + {ai};", f"        int {k} = {n['t']} + {ak};",
            f"        {n['As']}[{ai}][{ak}] = ({row} < {bounds[row]} && {k} < {K}) ? {a_ref} : ({a_ty})0;", "    }",
            f"    for (int {n['e']} = {n['tid']}; {n['e']} < {tk} * {tile}; {n['e']} += {threads}) {{",
            f"        int {k} = {n['t']} + {bk};", f"        {types[col]} {col} = {n['col0']} + {bj};",
            f"        {n['Bs']}[{bk}][{bj}] = ({k} < {K} && {col} < {bounds[col]}) ? {b_ref} : ({b_ty})0;", "    }",
            f"    {sync}", f"    {unroll}", f"    for (int {n['kk']} = 0; {n['kk']} < {tk}; ++{n['kk']}) {{", f"        {acc_ty} {n['ra']}[{ry}], {n['rb']}[{rx}];",
            f"        {unroll}", f"        for (int {m} = 0; {m} < {ry}; ++{m}) {n['ra']}[{m}] = {n['As']}[{n['ty']} + {m} * {by}][{n['kk']}];",
            f"        {unroll}", f"        for (int {m} = 0; {m} < {rx}; ++{m}) {n['rb']}[{m}] = {n['Bs']}[{n['kk']}][{n['tx']} + {m} * {bx}];",
            f"        {unroll}", f"        for (int {m} = 0; {m} < {ry * rx}; ++{m}) {reg} += {n['ra']}[{m} / {rx}] * {n['rb']}[{m} % {rx}];",
            "    }", f"    {sync}", "}",
            *each, f"    {inside}", f"        {decl}{acc} = {reg};", *("        " + s for s in after), "    }", "}",
        ]

