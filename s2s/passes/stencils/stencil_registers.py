"""stencil-registers: each thread computes `factor` consecutive outputs of a 2-D stencil along y from a window of input
rows held in registers, and the filter coefficients it reads at the same place for every thread once, into registers.

A 5x5 convolution reads 25 image points and 25 coefficients per output, each through L1: the kernel waits on load
issue, not on DRAM. Here the thread's (factor + rows of the footprint - 1) x (columns of the footprint) window is
loaded once (each point only where some thread of the original reads it: the reads' guard boxes shifted by the
footprint, as stencil-tiling's tile), the outputs' reads become reads of that window (constant indices once the
unrolled loops are unrolled: registers), and a read whose index moves only with the window loops (`k[(i+R)*5 + j+R]`,
the same for every thread) is loaded into registers the first time the thread reaches that loop, under the same
guards as the original's, and read from there at every point after. Per output, 25 + 25 loads become
(factor + 4) * 5 / factor + 25 / factor. The grid shrinks by `factor` along y (launch rule coarsen-y); the early
exits after y's declaration become `continue`. Loop bounds may be the file's integer macros (`for (i = -R; i <= R; ...)`).
With `cols=C` (2 or 4) each thread also takes C adjacent x points (rows as float2/float4 words where aligned and inside
the guards: _window_columns.py; grid / C along x; CUDA only; x unused before y's declaration), and where the point
body is a sum over the filter's rows, the rows are streamed into the F x C sums and stored as words
(_streamed_rows.py, _column_stores.py: the hand form's registers, 48 against 106 for conv2d_5x5 at 4 x 4).

Refused: what the stencil analysis refuses (s2s.lang.stencil), 3-D grids (stencil-streaming), y not declared at the
top as the global index, x declared after y, sizes in the window's index that are not parameters or compile-time
values, a window over REGISTER_LIMIT registers, barriers and shared memory. A 1-D kernel over `p / W`, `p % W` is
delinearized first (`delinearize-2d,stencil-registers`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from s2s.lang import index_split as ix
from s2s.lang.affine import Poly
from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import kernel_model
from s2s.lang.stencil import analyse

from ..common.statements import assigned, declared_before
from ..common.tree import body_node, fresh, indent_of, statements, text, walk
from ._register_window import elem, merged, moved_between_points, uniform_reads, unroll_windows, with_macros, y_header
from ._stencil import builtin, plus, spliced
from ._streamed_rows import Points, streamed
from ._window_columns import column_loop, window_load, x_declaration, xbase_edit

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void conv(const float* img, const float* k, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || x >= w - 1 || y < 1 || y >= h - 1)
        return;
    float s = 0.0f;
    for (int i = -1; i <= 1; i++)
        for (int j = -1; j <= 1; j++)
            s += k[(i + 1) * 3 + j + 1] * img[(y + i) * w + x + j];
    out[y * w + x] = s;
}
"""
EXAMPLE_AFTER = """\
__global__ void conv(const float* img, const float* k, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int ybase = (blockIdx.y * blockDim.y + threadIdx.y) * 4;
    float img_w[6][3];
    #pragma unroll
    for (int wr = 0; wr < 6; wr++) {
        #pragma unroll
        for (int wc = 0; wc < 3; wc++) {
            const int gy = ybase + wr - 1;
            const int gx = x + wc - 1;
            img_w[wr][wc] = (1 < h - 1 && 1 < w - 1 && gy >= 0 && gy < h && gx >= 0 && gx < w) ? img[w * gy + gx] : (float)0;
        }
    }
    float k_r[3][3];
    bool k_r_loaded = false;
    #pragma unroll
    for (int cy = 0; cy < 4; ++cy) {
        int y = ybase + cy;
        if (x < 1 || x >= w - 1 || y < 1 || y >= h - 1)
            continue;
        float s = 0.0f;
        if (!k_r_loaded) {
            #pragma unroll
            for (int i = -1; i < 2; i++) {
                #pragma unroll
                for (int j = -1; j < 2; j++) {
                    k_r[i + 1][j + 1] = k[(i + 1) * 3 + j + 1];
                }
            }
            k_r_loaded = true;
        }
        #pragma unroll
        for (int i = -1; i <= 1; i++) {
            #pragma unroll
            for (int j = -1; j <= 1; j++)
                s += k_r[i + 1][j + 1] * img_w[cy + i + 1][j + 1];
        }
        out[y * w + x] = s;
    }
}
"""
REGISTER_LIMIT = 160  # window and coefficient registers per thread: beyond it they spill
_BARRIERS = ("__syncthreads", "barrier(", "__shfl", "__syncwarp", "sub_group", "work_group")


@dataclass(frozen=True)
class StencilRegisters:
    name: ClassVar[str] = "stencil-registers"
    WHY_IT_EXISTS: ClassVar[str] = "2-D stencils reloading points and coefficients through L1 (the zoo's conv2d_5x5)"
    priority: ClassVar[int] = 12  # structural: after delinearize-2d (11) opens the 2-D shape, before stencil-tiling (13)
    space: ClassVar[tuple[str, ...]] = tuple(f"{p}stencil-registers{o}" for group in (("{factor=4 cols=4}", "", "{factor=8}"), (
        "{factor=16}", "{factor=8 cols=4}")) for p in ("", "delinearize-2d,") for o in group)
    factor: int = 4
    cols: int = 1  # adjacent x outputs per thread too, the window's rows loaded as float4/float2 words (_window_columns.py)
    coefficients: bool = True  # thread-uniform reads moving only with the window loops into registers, once

    def applies(self, facts: KernelFacts) -> bool | str:
        if not 2 <= self.factor <= 32:
            return "factor must be 2-32"
        if self.cols not in (1, 2, 4):
            return "cols must be 1, 2 or 4"
        if facts.shared or facts.atomics:
            return "kernel uses shared memory or atomics"
        if not facts.var_for("y") or not facts.var_for("x"):
            return "needs global thread indices along x and y (delinearize-2d makes them from a 1-D split)"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        if any(b.encode() in source[facts.body_start:facts.body_end] for b in _BARRIERS):
            return Refused("kernel uses barriers or warp collectives: threads of a block must stay in step")
        model = kernel_model(source, facts.dialect, facts.name)
        if model is None:
            return Refused("no kernel model")
        macros = ix.int_macros(source)
        model = with_macros(model, macros)
        st = analyse(source, facts.dialect, model, (facts.body_start, facts.body_end))
        if isinstance(st, str):
            return Refused(st)
        if not st.arrays:
            return Refused("no stencil input: " + ("; ".join(st.skipped) if st.skipped else "no read-only array"))
        if "z" in st.vars or any(not a.plane.is_zero for a in st.arrays):
            return Refused("a 3-D stencil: stencil-streaming marches along z")
        if st.exit_blocks:
            return Refused("an early exit runs statements before it returns")
        body = body_node(source, facts)
        stmts = statements(body)
        yv, xv = st.vars["y"], st.vars["x"]
        head = y_header(source, stmts, yv, xv)
        if isinstance(head, str):
            return Refused(head)
        decl, rest = head
        end = rest[-1].end_byte if rest else decl.end_byte
        rest_text = source[decl.end_byte:end].decode("utf-8", "replace")
        why_not = moved_between_points(source, facts, stmts, decl, end, rest_text, yv, xv)
        if why_not:
            return Refused(why_not)
        xdecl = x_declaration(source, stmts, decl, xv, facts.dialect) if self.cols > 1 else None  # past the last x: its guard
        if isinstance(xdecl, str):
            return Refused(xdecl)
        known = set(macros) | {n for n, _, p in model.params if not p and not assigned(n, rest_text)} | \
            set(declared_before(source, stmts, decl))
        f, cname, xname = self.factor, fresh(facts, source, f"c{yv}"), fresh(facts, source, f"c{xv}")
        names = {w: fresh(facts, source, w) for w in ("ybase", "wr", "wc", "gy", "gx", "xbase", "ok", "v")}
        edits: list[tuple[int, int, str]] = []
        lines: list[str] = []
        regs = 0
        types = {a.name: elem(facts, a.name) for a in st.arrays}
        for arr in st.arrays:
            loose = sorted((arr.base.names | arr.pitch.names) - known)
            if loose:
                return Refused(f"{arr.name}'s index uses {', '.join(loose)}, which is no parameter nor compile-time size")
            (y0, y1), (x0, x1) = arr.extent("y"), arr.extent("x")
            rows, cols = f + y1 - y0, x1 - x0 + self.cols
            regs += rows * cols
            win = fresh(facts, source, f"{arr.name}_w")
            wl = window_load(arr, st, names | {"xbase": names["xbase"] if self.cols > 1 else xv}, win, types[arr.name], rows, self.cols)
            lines += wl
            for r in arr.reads:
                row, col = (r.offset[1] - Poly.const(y0)), (r.offset[2] - Poly.const(x0))
                ctext = (f"{xname}{plus(col)}" if self.cols > 1 else col.text() if not col.is_zero else "0")
                edits.append((r.start, r.end, f"{win}[{cname}{plus(row)}][{ctext}]"))
        hoisted, why = ([], "") if not self.coefficients else uniform_reads(source, facts, model, st, body, known)
        for group in hoisted:
            regs += group.size
        if regs > REGISTER_LIMIT:
            return Refused(f"the window and coefficients need {regs} registers per thread, over {REGISTER_LIMIT}")
        for group in hoisted:
            lines += group.declare(facts, source)
            edits += group.edits(source)
        edits += unroll_windows(source, body, st, model)
        for ret in [n for n in walk(body) if n.type == "return_statement" and n.start_byte >= decl.end_byte]:
            edits.append((ret.start_byte, ret.end_byte, "continue;"))
        ind = indent_of(source, decl.start_byte)
        offset = next(m.offset for m in model.mapping if m.var == yv and m.kind == "global")
        gid = "get_global_id(1)" if facts.dialect == "opencl" else \
            f"{builtin(facts.dialect, 'blockIdx', 'y')} * blockDim.y + {builtin(facts.dialect, 'threadIdx', 'y')}"
        kind = text(source, decl)[: decl.named_children[-1].start_byte - decl.start_byte].rstrip()
        pad = "\n    " if self.cols == 1 else "\n        "
        inner = spliced(source, decl.end_byte, end, merged(edits)).replace("\n", pad)
        point = f"{pad[1:]}{kind} {yv} = {names['ybase']} + {cname};"
        if self.cols > 1:
            point = column_loop(ind, point, xname, self.cols, f"{kind} {xv} = {names['xbase']} + {xname};")
        pts = Points(f, self.cols, cname, xname, ((yv, f"{kind} {yv} = {names['ybase']} + {cname};"),
                                                 (xv, f"{kind} {xv} = {names['xbase']} + {xname};")))
        stream = streamed(source, facts, rest, merged(edits), st, model, hoisted, wl, names["wr"], names["xbase"], pts,
                              lambda w: fresh(facts, source, w)) if self.cols > 1 else "cols=1"
        out = [f"const int {names['ybase']} = ({'(int)' if facts.dialect == 'opencl' else ''}{gid}) * {f}{plus(offset)};"] + (
            stream if isinstance(stream, list) else lines + ["#pragma unroll", f"for (int {cname} = 0; {cname} < {f}; ++{cname}) {{",
                                                                     point + inner] + (["    }"] if self.cols > 1 else []) + ["}"])
        line_start = source.rfind(b"\n", 0, decl.start_byte) + 1
        alone = not source[line_start:decl.start_byte].strip()
        new = (ind if alone else "\n" + ind) + ("\n" + ind).join(out)
        what = ", ".join(f"{a.name} ({len(a.points())} points)" for a in st.arrays)
        extra = f"; {', '.join(g.array for g in hoisted)} in registers" if hoisted else (f"; coefficients stay: {why}" if why else "")
        edit: tuple[Edit, ...] = (Edit(line_start if alone else decl.start_byte, end, new),)
        if xdecl is not None:
            edit = (xbase_edit(xdecl, model, xv, names["xbase"], self.cols), *edit)
            return Rewrite(edit, LaunchChange(None, f"coarsen-xy:{self.cols}", per_item=f),
                           f"{f} x {self.cols} outputs per thread (y by x) from a register window of {what}{extra}, rows as words where aligned"
                           + ("; rows streamed into the sums" if isinstance(stream, list) else f"; window loaded first: {stream}"))
        return Rewrite(edit, LaunchChange(None, "coarsen-y", per_item=f),
                       f"{f} outputs per thread along {yv} from a register window of {what}{extra}")
