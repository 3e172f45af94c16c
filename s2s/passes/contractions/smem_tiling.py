"""smem-tiling: the naive matrix product becomes the classic shared-memory (OpenCL: __local) tiled product.

Shape: a 2-D mapping (col from x, row from y), a guard `if (row >= M || col >= N) return;`, and one
loop `for (int k = 0; k < K; ++k) ACC += A[f(row, k)] * B[g(k, col)];` where ACC is a local or C[idx].
The tiled loop runs before the guard (every thread must reach the barriers), loads are bounds-checked
so that sizes need not divide by the tile, and the old loop becomes `ACC += partial;`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import THREAD_BUILTIN, KernelFacts, idents

from ..common.tree import body_node, fresh, indent_of, statements, text

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
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    float part = 0;
    for (int t = 0; t < n; t += 16) {
        {
            int k = t + threadIdx.x;
            As[threadIdx.y][threadIdx.x] = (row < n && k < n) ? A[row * n + k] : (float)0;
        }
        {
            int k = t + threadIdx.y;
            Bs[threadIdx.y][threadIdx.x] = (k < n && col < n) ? B[k * n + col] : (float)0;
        }
        __syncthreads();
        for (int kk = 0; kk < 16; ++kk)
            part += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
        __syncthreads();
    }
    if (row >= n || col >= n) return;
    float sum = 0.0f;
    sum += part;
    C[row * n + col] = sum;
}
"""
_GLOBAL_INDEX = ("blockIdx.{a}*blockDim.{a}+threadIdx.{a}", "blockDim.{a}*blockIdx.{a}+threadIdx.{a}",
                 "threadIdx.{a}+blockIdx.{a}*blockDim.{a}", "threadIdx.{a}+blockDim.{a}*blockIdx.{a}", "get_global_id({d})")
_TERM = re.compile(r"^\s*(\w+)\s*>=\s*(.+?)\s*$|^\s*(.+?)\s*<=\s*(\w+)\s*$")


@dataclass(frozen=True)
class SmemTiling:
    name: ClassVar[str] = "smem-tiling"
    WHY_IT_EXISTS: ClassVar[str] = "the textbook naive GEMM with a 2-D mapping and an early-return guard"
    priority: ClassVar[int] = 10  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("smem-tiling{tile=32}", "smem-tiling{tile=16}")
    tile: int = 16

    def applies(self, facts: KernelFacts) -> bool | str:
        if self.tile not in {8, 16, 32}:
            return "tile must be 8, 16 or 32"
        if facts.dims != 2 or not facts.var_for("x") or not facts.var_for("y"):
            return "needs a 2-D thread mapping (col from x, row from y)"
        if len(facts.loops) != 1 or facts.loops[0].kind != "for_statement" or facts.shared or facts.atomics:
            return "needs exactly one for loop and no shared memory or atomics"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        row, col, loop, tile = facts.var_for("y"), facts.var_for("x"), facts.loops[0], self.tile
        stmts = statements(body_node(source, facts))
        at = next((i for i, s in enumerate(stmts) if s.start_byte == loop.start), -1)
        guard_at = next((i for i, s in enumerate(stmts[:max(at, 0)]) if is_guard(source, s)), -1)
        if at < 0 or guard_at < 0:
            return Refused("needs a guard `if (row >= M || col >= N) return;` before a top-level loop")
        for i, s in enumerate(stmts):
            if THREAD_BUILTIN.search(text(source, s)) and not (i < guard_at and s.type == "declaration"):
                return Refused("thread indices are used outside the row/col declarations")
        bounds = guard_bounds(text(source, stmts[guard_at].child_by_field_name("condition")).strip("() "))
        if row not in bounds or col not in bounds:
            return Refused(f"the guard does not bound both {row} and {col}")
        if not re.fullmatch(r"int\s+\w+\s*=\s*0\s*;", loop.init) or loop.step.replace(" ", "") not in {f"++{loop.var}", f"{loop.var}++"} \
                or not re.fullmatch(rf"{loop.var}\s*<\s*.+", loop.cond):
            return Refused("the loop must be `for (int k = 0; k < K; ++k)`")
        shape = contraction_product(source, stmts[at], loop.var, row, col, set(facts.locals))
        if isinstance(shape, str):
            return Refused(shape)
        acc, a_ref, b_ref, a_name = shape
        if idents(loop.bound + bounds[row] + bounds[col]) & set(facts.locals):
            return Refused("the loop bound and the guard bounds must not use local variables")
        p = facts.param(a_name)
        ty = p.base_type if p is not None else "float"
        cl = facts.dialect == "opencl"
        tx, ty_ = ("get_local_id(0)", "get_local_id(1)") if cl else ("threadIdx.x", "threadIdx.y")
        sync = "barrier(CLK_LOCAL_MEM_FENCE);" if cl else "__syncthreads();"
        space = "__local" if cl else "__shared__"
        a_s, b_s, part, t, kk = (fresh(facts, source, w) for w in ("As", "Bs", "part", "t", "kk"))
        k, K, M, N = loop.var, loop.bound, bounds[row], bounds[col]
        pad = indent_of(source, stmts[guard_at].start_byte)
        lines = [
            f"{space} {ty} {a_s}[{tile}][{tile}];", f"{space} {ty} {b_s}[{tile}][{tile}];", f"{ty} {part} = 0;",
            f"for (int {t} = 0; {t} < {K}; {t} += {tile}) {{",
            "    {", f"        int {k} = {t} + {tx};",
            f"        {a_s}[{ty_}][{tx}] = ({row} < {M} && {k} < {K}) ? {a_ref} : ({ty})0;", "    }",
            "    {", f"        int {k} = {t} + {ty_};",
            f"        {b_s}[{ty_}][{tx}] = ({k} < {K} && {col} < {N}) ? {b_ref} : ({ty})0;", "    }",
            f"    {sync}", f"    for (int {kk} = 0; {kk} < {tile}; ++{kk})",
            f"        {part} += {a_s}[{ty_}][{kk}] * {b_s}[{kk}][{tx}];", f"    {sync}", "}",
        ]
        block = "".join(line + "\n" + pad for line in lines)
        edits = (Edit(stmts[guard_at].start_byte, stmts[guard_at].start_byte, block),
                 Edit(loop.start, loop.end, f"{acc} += {part};"))
        return Rewrite(edits, LaunchChange((tile, tile, 1), "tile"), f"{tile}x{tile} {'__local' if cl else 'shared'} tiles of {a_name}")


def is_guard(source: bytes, s: Node) -> bool:
    cons = s.child_by_field_name("consequence")
    body = text(source, cons).strip("{} \n\t;")
    return s.type == "if_statement" and s.child_by_field_name("alternative") is None and body == "return"


def guard_bounds(cond: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for term in cond.split("||"):
        m = _TERM.match(term.strip("() "))
        if m and m.group(1):
            out[m.group(1)] = m.group(2)
        elif m and m.group(4):
            out[m.group(4)] = m.group(3)
    return out


def contraction_product(source: bytes, loop: Node, k: str, row: str, col: str, local: set[str]) -> tuple[str, str, str, str] | str:
    """(accumulator, row operand, column operand, row operand's array) of `acc += X[..] * Y[..]`."""
    body = loop.child_by_field_name("body")
    items = statements(body) if body is not None and body.type == "compound_statement" else [body] if body else []
    e = items[0].named_children[0] if len(items) == 1 and items[0].type == "expression_statement" else None
    if e is None or e.type != "assignment_expression" or text(source, e.child_by_field_name("operator")) != "+=":
        return "the loop body must be one accumulation `acc += A[..] * B[..];`"
    left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
    if left is None or right is None or right.type != "binary_expression" or text(source, right.child_by_field_name("operator")) != "*":
        return "the loop body must accumulate a product of two array elements"
    if left.type == "subscript_expression" and idents(text(source, left)) & {k}:
        return "the accumulation target depends on the loop variable"
    ops = [right.child_by_field_name("left"), right.child_by_field_name("right")]
    if any(o is None or o.type != "subscript_expression" for o in ops):
        return "both factors must be array elements"
    refs = [(text(source, o), idents(text(source, o)) & (local | {k})) for o in ops]
    by_row = [r for r, used in refs if k in used and used <= {row, k}]
    by_col = [r for r, used in refs if k in used and used <= {col, k}]
    if len(by_row) != 1 or len(by_col) != 1 or by_row[0] == by_col[0]:
        return f"one factor must depend on ({row}, {k}) only and the other on ({k}, {col}) only"
    a_name = by_row[0].split("[")[0].strip()
    return text(source, left), by_row[0], by_col[0], a_name


def index_type(source: bytes, s: Node, var: str, axis: str) -> str:
    """The declared type of `var` when `s` declares it as the global thread index along `axis` alone, else ""."""
    d = s.child_by_field_name("declarator")
    if s.type != "declaration" or d is None or d.type != "init_declarator" or len(s.children_by_field_name("declarator")) != 1:
        return ""
    if text(source, d.child_by_field_name("declarator")) != var:
        return ""
    value = re.sub(r"\s+", "", text(source, d.child_by_field_name("value")))
    ok = any(value == f.format(a=axis, d="xy".index(axis)) for f in _GLOBAL_INDEX)
    return source[s.start_byte : d.start_byte].decode().strip() if ok else ""


def acc_declaration(source: bytes, before: list[Node], acc: str) -> str | Refused:
    """The type prefix ("float ") of a local accumulator's declaration before the loop, "" when ACC is an array element."""
    found = ""
    for s in before:
        d = s.child_by_field_name("declarator")
        if s.type == "declaration" and d is not None and d.type == "init_declarator" and len(s.children_by_field_name("declarator")) == 1 \
                and text(source, d.child_by_field_name("declarator")) == acc:
            found = source[s.start_byte : d.start_byte].decode()
        elif s.type != "expression_statement" or [c.type for c in s.named_children] != ["assignment_expression"]:
            return Refused("before the loop, only the accumulator's declaration and assignments may stand")
    if "[" not in acc and not found:
        return Refused(f"the accumulator {acc} must be declared, with a value, between the guard and the loop")
    return found
