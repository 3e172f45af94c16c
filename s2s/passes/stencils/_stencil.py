"""Text shared by the stencil passes: the tile's load condition, its cooperative load, and a read from the tile."""
from __future__ import annotations

from s2s.lang.affine import Poly
from s2s.lang.stencil import Bound, Stencil, StencilArray, rectangles

_AXIS = {"x": "0", "y": "1", "z": "2"}


def builtin(dialect: str, what: str, axis: str) -> str:
    """threadIdx.x / get_local_id(0), blockIdx.x / get_group_id(0), gridDim.x / get_num_groups(0)."""
    if dialect != "opencl":
        return f"{what}.{axis}"
    return {"threadIdx": "get_local_id", "blockIdx": "get_group_id", "gridDim": "get_num_groups"}[what] + f"({_AXIS[axis]})"


def sync(dialect: str) -> str:
    return "barrier(CLK_LOCAL_MEM_FENCE);" if dialect == "opencl" else "__syncthreads();"


def space(dialect: str) -> str:
    return "__local" if dialect == "opencl" else "__shared__"


def plus(p: Poly) -> str:
    """` + p` / ` - p` / `` for zero."""
    if p.is_zero:
        return ""
    t = p.text()
    return f" - {(-p).text()}" if t.startswith("-") and len(p.terms) == 1 else f" + {t}" if not t.startswith("-") else f" + ({t})"


def _factor(p: Poly) -> str:
    return p.text() if len(p.terms) == 1 else f"({p.text()})"


def index_text(arr: StencilArray, coords: dict[str, str]) -> str:
    """The array's index at the point (coords: axis -> C expression)."""
    parts = [] if arr.base.is_zero else [arr.base.text()]
    if not arr.plane.is_zero:
        parts.append(f"{_factor(arr.plane)} * {coords['z']}")
    parts.append(f"{_factor(arr.pitch)} * {coords['y']}")
    parts.append(coords["x"])
    return " + ".join(parts)


def condition(arr: StencilArray, st: Stencil, coords: dict[str, str], in_plane: bool = False) -> str:
    """True exactly at the in-plane points (y, x) that some thread reads: the union over the reads' guard boxes."""
    groups: dict[tuple[Bound, ...], set[tuple[int, int]]] = {}
    for r in arr.reads:
        pts = {(p[1], p[2]) for p in r.points if not in_plane or p[0] == 0}
        if pts:
            groups.setdefault(tuple(sorted(set(r.bounds), key=repr)), set()).update(pts)
    alts = []
    for bounds, pts in groups.items():
        shared, per_rect = _nonempty(bounds, st), []
        for (y0, y1), (x0, x1) in rectangles(frozenset(pts)):
            terms = _axis_terms(bounds, st, "y", y0, y1, coords["y"]) + _axis_terms(bounds, st, "x", x0, x1, coords["x"])
            per_rect.append(" && ".join(dict.fromkeys(terms)) or "1")
        either = per_rect[0] if len(per_rect) == 1 else " || ".join(f"({t})" for t in per_rect)
        alts.append(" && ".join(shared + [f"({either})" if len(per_rect) > 1 and shared else either]))
    return alts[0] if len(alts) == 1 else " || ".join(f"({a})" for a in alts)


def _thread_bounds(bounds: tuple[Bound, ...], st: Stencil, axis: str) -> tuple[list[Poly], list[Poly]]:
    lows = [b.value for b in bounds if b.axis == axis and not b.upper and not b.position] or [st.offsets[axis]]
    highs = [b.value for b in bounds if b.axis == axis and b.upper and not b.position]
    return lows, highs


def _axis_terms(bounds: tuple[Bound, ...], st: Stencil, axis: str, a: int, b: int, coord: str) -> list[str]:
    lows, highs = _thread_bounds(bounds, st, axis)
    lows = [lo + Poly.const(a) for lo in lows] + [p.value for p in bounds if p.axis == axis and p.position and not p.upper]
    highs = [hi + Poly.const(b) for hi in highs] + [p.value for p in bounds if p.axis == axis and p.position and p.upper]
    return [f"{coord} >= {p.text()}" for p in _tightest(lows, 1)] + [f"{coord} < {p.text()}" for p in _tightest(highs, -1)]


def _tightest(values: list[Poly], sign: int) -> list[Poly]:
    """The bounds less those another one implies (a constant apart): the largest lower, the smallest upper bound."""
    out: list[Poly] = []
    for v in values:
        if any(((o - v).constant() or 0) * sign > 0 or (o == v) for o in out):
            continue
        out = [o for o in out if not ((v - o).constant() or 0) * sign > 0] + [v]
    return out


def _nonempty(bounds: tuple[Bound, ...], st: Stencil) -> list[str]:
    """`lo < hi` for every pair of thread bounds not known to hold: no thread, no point read."""
    out = []
    for axis in ("y", "x"):
        lows, highs = _thread_bounds(bounds, st, axis)
        for lo in lows:
            for hi in highs:
                gap = (hi - lo).constant()
                if gap is None or gap <= 0:
                    out.append(f"{lo.text()} < {hi.text()}")
    return list(dict.fromkeys(out))


def tile_load(arr: StencilArray, st: Stencil, dialect: str, names: dict[str, str], block: tuple[int, int], elem: str,
              pad: str, z: str = "", in_plane: bool = False) -> list[str]:
    """Lines that fill names['tile'] (declared by the caller) with the block's points of arr plus halo, cooperatively."""
    (y0, y1), (x0, x1) = arr.extent("y", in_plane), arr.extent("x", in_plane)
    rows, cols = block[1] + y1 - y0, block[0] + x1 - x0
    ly, lx, gy, gx, t = names["ly"], names["lx"], names["gy"], names["gx"], names["tile"]
    coords = {"y": gy, "x": gx, "z": z}
    cond = condition(arr, st, coords, in_plane)
    ty, tx = builtin(dialect, "threadIdx", "y"), builtin(dialect, "threadIdx", "x")
    by, bx = builtin(dialect, "blockIdx", "y"), builtin(dialect, "blockIdx", "x")
    lines = [f"for (int {ly} = {ty}; {ly} < {rows}; {ly} += {block[1]})",
             f"    for (int {lx} = {tx}; {lx} < {cols}; {lx} += {block[0]}) {{",
             f"        int {gy} = (int){by} * {block[1]} + {ly}{plus(st.offsets['y'] + Poly.const(y0))};",
             f"        int {gx} = (int){bx} * {block[0]} + {lx}{plus(st.offsets['x'] + Poly.const(x0))};",
             f"        {t}[{ly}][{lx}] = ({cond}) ? {arr.name}[{index_text(arr, coords)}] : ({elem})0;",
             "    }"]
    return [pad + line for line in lines]


def tile_shape(arr: StencilArray, block: tuple[int, int], in_plane: bool = False) -> tuple[int, int]:
    (y0, y1), (x0, x1) = arr.extent("y", in_plane), arr.extent("x", in_plane)
    return block[1] + y1 - y0, block[0] + x1 - x0


def tile_read(arr: StencilArray, tile: str, offset: tuple[Poly, Poly, Poly], dialect: str, in_plane: bool = False) -> str:
    """`tile[threadIdx.y + dy - ymin][threadIdx.x + dx - xmin]` for a read at offset (dz, dy, dx)."""
    (y0, _), (x0, _) = arr.extent("y", in_plane), arr.extent("x", in_plane)
    ty, tx = builtin(dialect, "threadIdx", "y"), builtin(dialect, "threadIdx", "x")
    return f"{tile}[{ty}{plus(offset[1] - Poly.const(y0))}][{tx}{plus(offset[2] - Poly.const(x0))}]"


def spliced(source: bytes, start: int, end: int, edits: list[tuple[int, int, str]]) -> str:
    """source[start:end] with the edits that lie inside it applied (the text a rewrite moves elsewhere)."""
    out, cursor = [], start
    for s, e, t in sorted(x for x in edits if start <= x[0] and x[1] <= end):
        out += [source[cursor:s].decode(), t]
        cursor = e
    return "".join(out) + source[cursor:end].decode()


def tile_ring(arr: StencilArray, st: Stencil, dialect: str, names: dict[str, str], block: tuple[int, int], elem: str,
              z: str) -> list[str]:
    """The cooperative load of plane z's halo ring only (the interior comes from the threads' own registers)."""
    lines = tile_load(arr, st, dialect, names, block, elem, "", z, in_plane=True)
    (y0, _), (x0, _) = arr.extent("y", True), arr.extent("x", True)
    ly, lx = names["ly"], names["lx"]
    ring = f"{ly} < {-y0} || {ly} >= {block[1] - y0} || {lx} < {-x0} || {lx} >= {block[0] - x0}"
    lines[2:2] = [f"        if (!({ring}))", "            continue;"]
    return lines
