"""stencil-streaming: 2.5-D blocking of a 3-D stencil: march along z with the column's z-1, z, z+1 points in registers
and plane z's tile plus halo in shared memory (OpenCL: __local).

Two shapes, read from the kernel model (s2s.lang.stencil): a 2-D grid whose threads loop over z, and a 3-D grid, which
becomes a 2-D grid of threads each marching over `zchunk` points of z (launch rule stream-z). Every thread runs the
loop and the barriers; the original's guards become `active`. Each point of z enters once: the thread's own column
value from a register rotated along z, the tile's halo ring loaded where the original reads it (the reads' guard
boxes shifted by the in-plane footprint). Refused: reads off the column in planes other than z, column offsets that
are not contiguous around 0, guards inside the loop, more than one stencil array, and what stencil-tiling refuses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.affine import Poly
from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts, idents

from ..common.tree import body_node, fresh, indent_of, statements, text
from ._stencil import builtin, condition, index_text, space, spliced, sync, tile_read, tile_ring, tile_shape
from ._streaming import boundary_copy, chunk_start, declares, exit_block, inner, is_exit, loop_range, loop_var, without, zrange
from .stencil_tiling import SMEM_LIMIT, stencil

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void heat(const float* u, float* unew, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || x >= nx - 1 || y < 1 || y >= ny - 1)
        return;
    for (int z = 1; z < nz - 1; z++) {
        int c = (z * ny + y) * nx + x;
        unew[c] = 0.4f * u[c] + 0.1f * (u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] + u[c - nx * ny] + u[c + nx * ny]);
    }
}
"""
EXAMPLE_AFTER = """\
__global__ void heat(const float* u, float* unew, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    __shared__ float u_tile[10][34];
    const bool active = !(x < 1 || x >= nx - 1 || y < 1 || y >= ny - 1);
    const bool own = 1 < ny - 1 && 1 < nx - 1 && ((y >= 0 && y < ny && x >= 1 && x < nx - 1) || (y >= 1 && y < ny - 1 && x >= 0 && x < nx));
    const int zlo = 1;
    const int zhi = nz - 1;
    float u_zm1 = 0, u_z0 = 0, u_zp1 = 0;
    if (active) u_zm1 = u[nx*ny * (zlo - 1) + nx * y + x];
    if (active || (own && zlo < zhi)) u_z0 = u[nx*ny * (zlo) + nx * y + x];
    for (int z = zlo; z < zhi; z++) {
        if (active || (own && z + 1 < zhi)) u_zp1 = u[nx*ny * (z + 1) + nx * y + x];
        __syncthreads();
        u_tile[threadIdx.y + 1][threadIdx.x + 1] = u_z0;
        for (int ly = threadIdx.y; ly < 10; ly += 8)
            for (int lx = threadIdx.x; lx < 34; lx += 32) {
                if (!(ly < 1 || ly >= 9 || lx < 1 || lx >= 33))
                    continue;
                int gy = (int)blockIdx.y * 8 + ly - 1;
                int gx = (int)blockIdx.x * 32 + lx - 1;
                u_tile[ly][lx] = (1 < ny - 1 && 1 < nx - 1 && ((gy >= 0 && gy < ny && gx >= 1 && gx < nx - 1) || (gy >= 1 && gy < ny - 1 && gx >= 0 && gx < nx))) ? u[nx*ny * z + nx * gy + gx] : (float)0;
            }
        __syncthreads();
        if (active) {
            int c = (z * ny + y) * nx + x;
            unew[c] = 0.4f * u_z0 + 0.1f * (u_tile[threadIdx.y + 1][threadIdx.x] + u_tile[threadIdx.y + 1][threadIdx.x + 2] + u_tile[threadIdx.y][threadIdx.x + 1] + u_tile[threadIdx.y + 2][threadIdx.x + 1] + u_zm1 + u_zp1);
        }
        u_zm1 = u_z0;
        u_z0 = u_zp1;
    }
}
"""


ZCHUNK = 64


@dataclass(frozen=True)
class StencilStreaming:
    name: ClassVar[str] = "stencil-streaming"
    WHY_IT_EXISTS: ClassVar[str] = "3-D stencils, blocked in 2.5-D with the z neighbours in registers"
    priority: ClassVar[int] = 14  # structural, beside stencil-tiling
    space: ClassVar[tuple[str, ...]] = ("stencil-streaming", "stencil-streaming{block=32x16}", "stencil-streaming{zchunk=16}")
    block: tuple[int, ...] = (32, 8)
    zchunk: int = ZCHUNK  # a 3-D grid: the points of z each thread marches over

    def applies(self, facts: KernelFacts) -> bool | str:
        if len(self.block) != 2 or self.block[0] % 16 or not 32 <= self.block[0] * self.block[1] <= 1024 or self.zchunk < 2:
            return "block must be two sizes, x a multiple of 16, with 32 to 1024 threads; zchunk at least 2"
        if facts.shared or facts.atomics:
            return "kernel uses shared memory or atomics"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        stmts = statements(body_node(source, facts))
        grid3 = facts.var_for("z") if any(a == "z" for _, a in facts.mapping) else ""
        head = next((stmts[:i] for i, s in enumerate(stmts) if s.type != "declaration"), stmts)
        rest = stmts[len(head):]
        if not rest:
            return Refused("the kernel must be declarations, then its guards and work")
        guards = next((rest[:i] for i, s in enumerate(rest) if not is_exit(s, source)), rest)
        work = rest[len(guards):]
        if any(is_exit(s, source) for s in work):
            return Refused("an early exit after the work began: every thread must reach the barriers")
        block_guard = len(work) == 1 and work[0].type == "if_statement" and work[0].child_by_field_name("alternative") is None
        if block_guard and guards:
            return Refused("both early exits and a guarded block")
        inside = inner(work[0].child_by_field_name("consequence")) if block_guard else work
        loop = inside[0] if not grid3 and len(inside) == 1 and inside[0].type == "for_statement" else None
        if not grid3 and loop is None:
            return Refused("needs a 3-D grid, or a 2-D grid whose threads run one loop over z")
        if not grid3 and self.zchunk != ZCHUNK:
            return Refused("zchunk applies to a 3-D grid only (this kernel's loop already covers z)")
        zvar = grid3 or loop_var(loop, source)
        st = stencil(source, facts, "" if grid3 else zvar)
        if isinstance(st, str):
            return Refused(st)
        exit_, between = exit_block(st, work, source)
        if st.exit_blocks and (exit_ is None or not grid3):
            return Refused("an early exit runs statements before it returns (a boundary copy), other than once on a 3-D grid")
        arrs = [a for a in st.arrays if not a.plane.is_zero]
        if len(arrs) != 1 or len(st.arrays) != 1:
            return Refused(f"needs one stencil array marching along {zvar}, found {len(arrs)} of {len(st.arrays)}")
        arr = arrs[0]
        column = sorted({p[0] for p in arr.points() if p[1:] == (0, 0)})
        if any(p[0] and p[1:] != (0, 0) for p in arr.points()):
            return Refused(f"{arr.name} is read off the column in another plane: one tile per plane would be needed")
        if 0 not in column or column != list(range(column[0], column[-1] + 1)):
            return Refused(f"the column offsets along {zvar} ({column}) are not contiguous around 0")
        if len({r.bounds for r in arr.reads}) != 1:
            return Refused(f"the reads of {arr.name} sit under different guards")
        bounds = arr.reads[0].bounds
        if not grid3 and any(b.axis == "z" for b in bounds):
            return Refused(f"a guard inside the loop bounds {zvar}")
        block = (self.block[0], self.block[1])
        rows, cols = tile_shape(arr, block, in_plane=True)
        elem = facts.param(arr.name).base_type if facts.param(arr.name) else "float"  # type: ignore[union-attr]
        tiled = any(p[0] == 0 and p[1:] != (0, 0) for p in arr.points())
        if tiled and rows * cols * (8 if "double" in elem else 4) > SMEM_LIMIT:
            return Refused("the tile needs more than 48 KiB of shared memory")
        n = {w: fresh(facts, source, w) for w in ("ly", "lx", "gy", "gx", "active", "own", "zlo", "zhi")}
        tile = fresh(facts, source, f"{arr.name}_tile")
        reg = {d: fresh(facts, source, f"{arr.name}_z{'m' if d < 0 else 'p' if d > 0 else ''}{abs(d)}") for d in column}
        guard_nodes = guards or (work[:1] if block_guard else [])
        if grid3:
            out = zrange(st, bounds, zvar, self.zchunk, facts.dialect)
            if isinstance(out, str):
                return Refused(out)
            lo, hi = out
            if any(zvar in idents(text(source, s)) for s in head if not declares(s, zvar, source)):
                return Refused(f"{zvar} is used outside the work and its guard's bounds")
            maybe = [without(g, zvar, source) for g in guard_nodes] + ([without(exit_, zvar, source, "||")] if exit_ else [])
            conds = [c for c in maybe if c]
        else:
            rng = loop_range(loop, facts, source, set(st.vars.values()))
            if isinstance(rng, str):
                return Refused(rng)
            lo, hi = rng
            conds = [text(source, g.child_by_field_name("condition")).strip()[1:-1].strip() for g in guard_nodes]
        active = " && ".join(f"!({c})" for c in conds) if guards or exit_ else (conds[0] if conds else "true")
        reads = [(r.start, r.end, reg[r.offset[0].constant() or 0] if r.offset[1:] == (Poly(), Poly()) else
                  tile_read(arr, tile, r.offset, facts.dialect, True)) for r in arr.reads]
        body = loop.child_by_field_name("body") if loop is not None else None
        if body is not None:
            inside = statements(body) if body.type == "compound_statement" else [body]
        pad = indent_of(source, rest[0].start_byte)
        if inside:  # the statements become the loop's body, one level deeper than `pad`
            ind = indent_of(source, inside[0].start_byte)
            runs = [between, inside[len(between) + 1:]] if exit_ is not None else [inside]
            raw = (ind + ("\n" + ind).join(spliced(source, r[0].start_byte, r[-1].end_byte, reads) for r in runs if r)).split("\n")
            work_text = "{\n" + "\n".join(pad + "    " + (x[len(ind):] if x.startswith(ind) else x.lstrip()) for x in raw) + "\n" + pad + "}"
        at = {"y": st.vars["y"], "x": st.vars["x"], "z": ""}
        load = f"{arr.name}[{index_text(arr, {**at, 'z': '(ZPOS)'})}]"
        copy = boundary_copy(source, guards, between, exit_, zvar, chunk_start(st, self.zchunk, facts.dialect), self.zchunk) if exit_ else []
        lines = ([f"{space(facts.dialect)} {elem} {tile}[{rows}][{cols}];"] if tiled else []) + copy + [
            f"const bool {n['active']} = {active};",
            f"const bool {n['own']} = {condition(arr, st, at, True) if tiled else n['active']};",
            f"const int {n['zlo']} = {lo};", f"const int {n['zhi']} = {hi};",
            f"{elem} " + ", ".join(f"{reg[d]} = 0" for d in column) + ";"]
        for d in column[:-1]:
            when = n["active"] if d < 0 else f"{n['active']} || ({n['own']} && {n['zlo']}{_plus(d)} < {n['zhi']})"
            lines.append(f"if ({when}) {reg[d]} = {load.replace('ZPOS', n['zlo'] + _plus(d))};")
        top = column[-1]
        lines.append(f"for (int {zvar} = {n['zlo']}; {zvar} < {n['zhi']}; {zvar}++) {{")
        lines.append(f"    if ({n['active']} || ({n['own']} && {zvar}{_plus(top)} < {n['zhi']})) "
                     f"{reg[top]} = {load.replace('ZPOS', zvar + _plus(top))};")
        if tiled:
            ty, tx = builtin(facts.dialect, "threadIdx", "y"), builtin(facts.dialect, "threadIdx", "x")
            (y0, _), (x0, _) = arr.extent("y", True), arr.extent("x", True)
            lines += [f"    {sync(facts.dialect)}", f"    {tile}[{ty}{_plus(-y0)}][{tx}{_plus(-x0)}] = {reg[0]};"]
            lines += ["    " + x for x in tile_ring(arr, st, facts.dialect, {**n, "tile": tile}, block, elem, zvar)]
            lines.append(f"    {sync(facts.dialect)}")
        lines.append(f"    if ({n['active']}) " + _indent(work_text, "    "))
        lines += [f"    {reg[d]} = {reg[d + 1]};" for d in column[:-1]] + ["}"]
        edits = [Edit(rest[0].start_byte, stmts[-1].end_byte, ("\n" + pad).join(lines))]
        if grid3:
            decl = next(s for s in head if declares(s, zvar, source))
            edits.append(Edit(decl.start_byte, rest[0].start_byte, ""))
        launch = LaunchChange((block[0], block[1], 1), "stream-z", self.zchunk) if grid3 else \
            LaunchChange((block[0], block[1], 1), "same-coverage")
        return Rewrite(tuple(edits), launch, f"{arr.name} streamed along {zvar}: column {column} in registers"
                       + (f", {rows}x{cols} tile of plane {zvar}" if tiled else ""))


def _plus(d: int) -> str:
    return f" + {d}" if d > 0 else f" - {-d}" if d < 0 else ""


def _indent(t: str, pad: str) -> str:
    return t.replace("\n", "\n" + pad)



