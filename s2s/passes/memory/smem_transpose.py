"""smem-transpose: a copy `B[D(row, col)] = A[S(row, col)]` whose two sides run along different axes goes through a shared tile.

Shape: a 2-D mapping (col from x, row from y, both `blockIdx * blockDim + threadIdx`), then only the guarded
copy: `if (row < R && col < C) B[..] = A[..];` or `if (row >= R || col >= C) return; B[..] = A[..];`, where
one index is `row * ld + col` and the other `col * ld + row`. Each block stages a TILE x TILE tile in
`__shared__ T tile[TILE][TILE + 1]` (padded against bank conflicts): it is read with the source's fast
index on threadIdx.x and written with the destination's, both bounds-checked, with one barrier that every
thread reaches. Loops over the tile make any block shape correct; the launch becomes (TILE, TILE) blocks. With
`rows`, the block is (TILE, rows) and each thread copies TILE/rows elements in a loop of constant trip count: unrolled,
its loads are all in flight at once (with a `blockDim.y` stride each load waited for the one before: a warp had one
load in flight, and the zoo's transposes stayed latency-bound at about half the copy bandwidth).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts, idents
from s2s.lang.macros import expand, function_macros

from ..common.tree import body_node, fresh, statements, text

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void transpose(const float* A, float* At, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < n && j < n) {
        At[j * n + i] = A[i * n + j];
    }
}
"""
EXAMPLE_AFTER = """\
__global__ void transpose(const float* A, float* At, int n)
{
    __shared__ float tile[32][33];
    for (int ty = threadIdx.y; ty < 32; ty += blockDim.y)
        for (int tx = threadIdx.x; tx < 32; tx += blockDim.x) {
            int j = blockIdx.x * 32 + tx;
            int i = blockIdx.y * 32 + ty;
            if (i < n && j < n) tile[ty][tx] = A[i * n + j];
        }
    __syncthreads();
    for (int ty = threadIdx.y; ty < 32; ty += blockDim.y)
        for (int tx = threadIdx.x; tx < 32; tx += blockDim.x) {
            int j = blockIdx.x * 32 + ty;
            int i = blockIdx.y * 32 + tx;
            if (i < n && j < n) At[j * n + i] = tile[tx][ty];
        }
}
"""
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b|\*")


@dataclass(frozen=True)
class SmemTranspose:
    name: ClassVar[str] = "smem-transpose"
    WHY_IT_EXISTS: ClassVar[str] = "transposing copies, latency-bound at half the copy bandwidth (the zoo's transposes)"
    priority: ClassVar[int] = 60  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("smem-transpose{tile=32}", "smem-transpose{tile=32 rows=8}")
    tile: int = 32
    rows: int = 0  # threads per block along y (each handles tile/rows rows of the tile); 0: one thread per element

    def applies(self, facts: KernelFacts) -> bool | str:
        if self.tile not in {8, 16, 32}:
            return "tile must be 8, 16 or 32"
        if self.rows and (self.rows > self.tile or self.tile % self.rows):
            return "rows must divide the tile"
        if facts.dialect == "opencl":
            return "CUDA/HIP only"
        if facts.dims != 2 or not facts.var_for("x") or not facts.var_for("y"):
            return "needs a 2-D thread mapping (col from x, row from y)"
        if facts.loops or facts.shared or facts.atomics:
            return "needs a plain copy: no loops, shared memory or atomics"
        if facts.launch_bounds:
            return "__launch_bounds__ would cap the (tile, tile) block"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        row, col, t = facts.var_for("y"), facts.var_for("x"), self.tile
        stmts = statements(body_node(source, facts))
        decls = {}
        for s in stmts[:2]:
            found = _mapping_decl(source, s, {row: "y", col: "x"})
            if found:
                decls[found[0]] = found[1]
        if set(decls) != {row, col}:
            return Refused(f"the kernel must start with `int {col} = blockIdx.x * blockDim.x + threadIdx.x;` and the same for {row} on y")
        copy = _guarded_copy(source, stmts[2:], row, col)
        if isinstance(copy, str):
            return Refused(copy)
        guard, dst, d_idx, src_arr, s_idx = copy
        d_fast, s_fast = _fast(d_idx, row, col), _fast(s_idx, row, col)
        if not d_fast or not s_fast:
            return Refused(f"both indices must be `{row} * ld + {col}` or `{col} * ld + {row}`")
        if d_fast == s_fast:
            return Refused("both accesses already run along the same axis: nothing to transpose")
        if idents(guard + d_idx + s_idx) & (set(facts.locals) - {row, col}):
            return Refused("the bounds and indices may use only parameters and the thread indices")
        p = facts.param(src_arr)
        if p is None or not p.pointer or p.written or src_arr == dst or facts.param(dst) is None:
            return Refused("the copy must read one pointer parameter and write another")
        ty = " ".join(_QUALIFIERS.sub(" ", p.type).split())
        tile, tx, ty_ = (fresh(facts, source, w) for w in ("tile", "tx", "ty"))
        base = {col: f"blockIdx.x * {t}", row: f"blockIdx.y * {t}"}

        step = fresh(facts, source, "k")

        def phase(fast: str, body: str) -> list[str]:
            inner = [*(f"{decls[v]} {v} = {base[v]} + {tx if v == fast else ty_};" for v in (col, row)), f"if ({guard}) {body};"]
            if self.rows:  # the pass sets the block to (tile, rows): constant trip counts, so the loads unroll and overlap
                return ["#pragma unroll", f"for (int {step} = 0; {step} < {t}; {step} += {self.rows}) {{",
                        f"    const int {ty_} = threadIdx.y + {step}, {tx} = threadIdx.x;", *(f"    {ln}" for ln in inner), "}"]
            return [f"for (int {ty_} = threadIdx.y; {ty_} < {t}; {ty_} += blockDim.y)",
                    f"    for (int {tx} = threadIdx.x; {tx} < {t}; {tx} += blockDim.x) {{", *(f"        {ln}" for ln in inner), "    }"]
        lines = [f"__shared__ {ty} {tile}[{t}][{t + 1}];",
                 *phase(s_fast, f"{tile}[{ty_}][{tx}] = {src_arr}[{s_idx}]"), "__syncthreads();",
                 *phase(d_fast, f"{dst}[{d_idx}] = {tile}[{tx}][{ty_}]")]
        body = "{\n" + "".join(f"    {line}\n" for line in lines) + "}"
        rows = self.rows or t  # the tile loops stride by blockDim.y: fewer rows of threads each copy several
        launch = LaunchChange((t, t, 1), "tile") if rows == t else LaunchChange((t, rows, 1), "tile-coarse", per_item=t)
        return Rewrite((Edit(facts.body_start, facts.body_end, body),), launch,
                       f"{t}x{t} shared tile between {src_arr} and {dst}" + (f", {t}x{rows} threads" if rows != t else ""))


def _mapping_decl(source: bytes, s: Node, axes: dict[str, str]) -> tuple[str, str] | None:
    """(variable, declared type) of `int v = blockIdx.a * blockDim.a + threadIdx.a;` for a mapping variable."""
    ds = s.children_by_field_name("declarator") if s.type == "declaration" else []
    if len(ds) != 1 or ds[0].type != "init_declarator":
        return None
    var, value = text(source, ds[0].child_by_field_name("declarator")), text(source, ds[0].child_by_field_name("value"))
    a = axes.get(var, "")
    terms = sorted(value.replace(" ", "").split("+"))
    if not a or terms not in ([f"blockDim.{a}*blockIdx.{a}", f"threadIdx.{a}"], [f"blockIdx.{a}*blockDim.{a}", f"threadIdx.{a}"]):
        return None
    return var, text(source, s.child_by_field_name("type"))


def _guarded_copy(source: bytes, rest: list[Node], row: str, col: str) -> tuple[str, str, str, str, str] | str:
    """(condition under which the copy runs, dst, dst index, src, src index) of the guarded copy."""
    bad = "the kernel must do only the guarded copy `if (row < R && col < C) B[..] = A[..];`"
    if len(rest) == 1 and rest[0].type == "if_statement" and rest[0].child_by_field_name("alternative") is None:
        cond, op = text(source, rest[0].child_by_field_name("condition")).strip()[1:-1].strip(), "&&"
        body = rest[0].child_by_field_name("consequence")
        inner = statements(body) if body is not None and body.type == "compound_statement" else [body] if body else []
        if len(inner) != 1:
            return bad
        copy = inner[0]
    elif len(rest) == 2 and rest[0].type == "if_statement" and text(source, rest[0].child_by_field_name("consequence")).strip("{} \n\t;") == "return":
        cond, op, copy = text(source, rest[0].child_by_field_name("condition")).strip()[1:-1].strip(), "||", rest[1]
    else:
        return bad
    terms = [x.strip() for x in cond.split(op)]
    less = r"^\(?\s*(\w+)\s*<\s*([^<>=]+?)\s*\)?$" if op == "&&" else r"^\(?\s*(\w+)\s*>=\s*([^<>=]+?)\s*\)?$"
    bounded = {m.group(1) for m in (re.match(less, x) for x in terms) if m}
    if len(terms) != 2 or bounded != {row, col}:
        return f"the guard must bound exactly {row} and {col} (`{row} < R && {col} < C` or its early-return form)"
    e = copy.named_children[0] if copy.type == "expression_statement" and copy.named_children else None
    if e is None or e.type != "assignment_expression" or text(source, e.child_by_field_name("operator")) != "=":
        return bad
    left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
    sides = [_subscript(source, x) for x in (left, right)]
    if sides[0] is None or sides[1] is None:
        return bad
    (dst, d_idx), (src_arr, s_idx) = sides[0], sides[1]
    return (cond if op == "&&" else f"!({cond})"), dst, d_idx, src_arr, s_idx


def _subscript(source: bytes, node: Node | None) -> tuple[str, str] | None:
    """(array, index) of `A[i]`, or of a call to a function-like macro of the file that expands to one (`OUT(r, c)`)."""
    if node is not None and node.type == "call_expression":
        exp = expand(node, source, function_macros(source), {})
        return _split(exp.data, exp.node) if exp is not None and exp.node.type == "subscript_expression" else None
    return _split(source, node) if node is not None and node.type == "subscript_expression" else None


def _split(source: bytes, sub: Node) -> tuple[str, str]:
    idx = text(source, sub.child_by_field_name("indices") or sub.child_by_field_name("index")).strip()
    return text(source, sub.child_by_field_name("argument")), idx[1:-1].strip() if idx.startswith("[") else idx


def _fast(index: str, row: str, col: str) -> str:
    """The variable with unit stride in `slow * ld + fast` (either order of terms and factors), "" otherwise."""
    flat = index.replace(" ", "")
    while re.search(r"\((\w+)\)", flat):  # a macro's `((r)) * N + ((c))` too
        flat = re.sub(r"\((\w+)\)", r"\1", flat)
    terms = flat.split("+")
    if len(terms) != 2:
        return ""
    for fast, prod in (terms, terms[::-1]):
        factors = prod.split("*")
        if fast in (row, col) and len(factors) == 2 and ({row, col} - {fast}) & set(factors):
            ld = [f for f in factors if f not in (row, col)]
            if len(ld) == 1 and not idents(ld[0]) & {row, col}:
                return fast
    return ""
