"""stencil-registers' window load and its `cols` form: each thread computes `cols` adjacent x outputs besides its rows
along y, from a window `cols - 1` columns wider, each window row loaded as float4/float2 words where the row lies inside
the guards and its first column is aligned (checked at run time), else element by element as the one-column form."""
from __future__ import annotations

import re

from tree_sitter import Node

from s2s.lang.affine import Poly
from s2s.lang.edits import Edit
from s2s.lang.kernel_model import KernelModel
from s2s.lang.stencil import Stencil, StencilArray

from ..common.statements import uses_axis
from ..common.tree import text
from ._stencil import condition, index_text, plus

_VEC = {1: "", 2: "float2", 4: "float4"}
_LANES = ("x", "y", "z", "w")


def x_declaration(source: bytes, stmts: list[Node], decl_y: Node, xv: str, dialect: str) -> Node | str:
    """x's declaration (alone, before y's) when nothing between it and y's declaration uses x, else why not."""
    if dialect == "opencl":
        return "cols > 1 writes CUDA's float2/float4 words"
    for s in stmts:
        if s.start_byte >= decl_y.start_byte:
            break
        if s.type != "declaration":
            continue
        names = [text(source, c.child_by_field_name("declarator")) for c in s.named_children if c.type == "init_declarator"]
        if xv not in names:
            continue
        if len(names) != 1:
            return f"{xv} must be declared alone for cols > 1"
        between = source[s.end_byte:decl_y.start_byte].decode("utf-8", "replace")
        if uses_axis(between, "x") or any(w == xv for w in _words(between)):
            return f"{xv} or the x thread index is used before {xv}'s points are known (cols > 1)"
        return s
    return f"{xv} is not declared before the loop over the outputs (cols > 1)"


def _words(t: str) -> list[str]:
    return re.findall(r"[A-Za-z_]\w*", t)


def window_load(arr: StencilArray, st: Stencil, names: dict[str, str], win: str, elem: str, rows: int, cols: int) -> list[str]:
    """The window load: rows x (cols + footprint width - 1) from column xbase + x0 on; words where aligned."""
    (y0, _), (x0, x1) = arr.extent("y"), arr.extent("x")
    width = cols + x1 - x0
    wr, wc, gy, gx, xb = names["wr"], names["wc"], names["gy"], names["gx"], names["xbase"]
    coords = {"y": gy, "x": gx, "z": ""}
    cond = condition(arr, st, coords)
    if cols == 1:  # one column: element by element, gy with gx
        return [f"{elem} {win}[{rows}][{width}];", "#pragma unroll", f"for (int {wr} = 0; {wr} < {rows}; {wr}++) {{", "    #pragma unroll",
                f"    for (int {wc} = 0; {wc} < {width}; {wc}++) {{", f"        const int {gy} = {names['ybase']} + {wr}{plus(Poly.const(y0))};",
                f"        const int {gx} = {xb} + {wc}{plus(Poly.const(x0))};",
                f"        {win}[{wr}][{wc}] = ({cond}) ? {arr.name}[{index_text(arr, coords)}] : ({elem})0;", "    }", "}"]
    scalar = ["    #pragma unroll", f"    for (int {wc} = 0; {wc} < {width}; {wc}++) {{",
              f"        const int {gx} = {xb} + {wc}{plus(Poly.const(x0))};",
              f"        {win}[{wr}][{wc}] = ({cond}) ? {arr.name}[{index_text(arr, coords)}] : ({elem})0;", "    }"]
    head = [f"{elem} {win}[{rows}][{width}];", "#pragma unroll", f"for (int {wr} = 0; {wr} < {rows}; {wr}++) {{",
            f"    const int {gy} = {names['ybase']} + {wr}{plus(Poly.const(y0))};"]
    if elem != "float" or cols not in (2, 4):
        return head + scalar + ["}"]
    ok, at = names["ok"], {"y": gy, "x": xb, "z": ""}
    # the row's first word aligned (tested per row: a uniform test of the base pointer alone took nvcc's code to 56
    # registers and conv2d_5x5 to 45.4 us against 44.3 on the H200, conv probe 2026-12-01)
    lines = head + [f"    bool {ok} = (size_t)(const void*)&{arr.name}[{index_text(arr, at)}] % {4 * cols} == 0;"]
    if "||" in cond:  # a union of boxes: every column of the row tested
        lines += ["    #pragma unroll", f"    for (int {wc} = 0; {wc} < {width}; {wc}++) {{",
                  f"        const int {gx} = {xb} + {wc}{plus(Poly.const(x0))};", f"        {ok} = {ok} && ({cond});", "    }"]
    else:  # one box, each term monotone in gx: the first and last columns decide the row (column by column,
        # conv2d_5x5 took 48.8 us on the H200, 44.3 so)
        lines += [f"    {ok} = {ok} && ({condition(arr, st, {'y': gy, 'x': f'({xb}{plus(Poly.const(c))})', 'z': ''})});"
                  for c in (x0, x0 + width - 1)]
    lines.append(f"    if ({ok}) {{")
    c, n = x0, 0
    while c < x0 + width:
        v = next(w for w in (4, 2, 1) if w <= cols and c % w == 0 and c + w <= x0 + width)
        first = {"y": gy, "x": f"{xb}{plus(Poly.const(c))}", "z": ""}
        ref = f"{arr.name}[{index_text(arr, first)}]"
        if v == 1:
            lines.append(f"        {win}[{wr}][{c - x0}] = {ref};")
        else:
            w = f"{names['v']}{n}"
            lines.append(f"        const {_VEC[v]} {w} = *(const {_VEC[v]}*)&{ref};")
            lines += [f"        {win}[{wr}][{c - x0 + k}] = {w}.{_LANES[k]};" for k in range(v)]
        c, n = c + v, n + 1
    return lines + ["    } else {"] + ["    " + ln for ln in scalar] + ["    }", "}"]


def xbase_edit(xdecl: Node, model: KernelModel, xv: str, xbase: str, cols: int) -> Edit:
    """x's declaration becomes the thread's first column: `const int xbase = (global x index) * cols + offset;`."""
    off = next(m.offset for m in model.mapping if m.var == xv and m.kind == "global")
    return Edit(xdecl.start_byte, xdecl.end_byte, f"const int {xbase} = (blockIdx.x * blockDim.x + threadIdx.x) * {cols}{plus(off)};")


def column_loop(ind: str, point: str, cx: str, cols: int, x_decl: str) -> str:
    """The loop over the thread's columns inside the one over its rows, opening with y's and x's declarations."""
    return f"    #pragma unroll\n{ind}    for (int {cx} = 0; {cx} < {cols}; ++{cx}) {{\n{ind}{point}\n{ind}        {x_decl}"
