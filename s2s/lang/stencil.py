"""Stencil footprints read from the kernel model: which input arrays each thread reads around its own point, and where.

An input array is a stencil when every read of it is `base + plane*(z + dz) + pitch*(y + dy) + (x + dx)` with x, y
(and z) the thread's point and the offsets constants or expressions of short window loops with constant bounds
(`for (dy = -1; dy <= 1; dy++)`). For a tile of threads to stage what they read, the tile must hold every point some
thread of it reads and read no point the original does not: for each read, the guards that hold around it (a
top-level early return, the if blocks it sits in) give a box of threads and, for guards on `xx = x + dx`, a box of
positions; a point p is read exactly when p - d lies in the thread box for some offset d of the footprint and p lies in
the position box. The footprint is split into maximal rectangles, so that condition is a short disjunction of boxes.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from tree_sitter import Node

from .affine import Poly, poly_of
from .kernel_model import ArrayAccess, Guard, KernelModel
from .parsing import descendants, parse, src

AXES3 = ("z", "y", "x")
_WINDOW_TRIP = 16
_NOT_ALLOWED = {"while_statement", "do_statement", "switch_statement", "conditional_expression", "goto_statement",
                "break_statement", "continue_statement"}


@dataclass(frozen=True)
class Bound:
    axis: str
    upper: bool  # coordinate < value (upper) or coordinate >= value
    value: Poly
    position: bool  # bounds the point read (`xx = x + dx`), not the thread


@dataclass(frozen=True)
class Read:
    start: int
    end: int
    offset: tuple[Poly, Poly, Poly]  # (dz, dy, dx)
    points: frozenset[tuple[int, int, int]]
    bounds: tuple[Bound, ...]


@dataclass(frozen=True)
class StencilArray:
    name: str
    base: Poly  # the index is base + plane*z + pitch*y + x at offset 0
    pitch: Poly
    plane: Poly
    reads: tuple[Read, ...]

    def extent(self, axis: str, in_plane: bool = False) -> tuple[int, int]:
        """(lowest, highest) offset along an axis; `in_plane`: of the reads at dz = 0 only."""
        d = AXES3.index(axis)
        vals = [p[d] for r in self.reads for p in r.points if not in_plane or p[0] == 0]
        return (min(vals), max(vals)) if vals else (0, 0)

    def points(self) -> frozenset[tuple[int, int, int]]:
        return frozenset(p for r in self.reads for p in r.points)


@dataclass(frozen=True)
class Stencil:
    vars: dict[str, str]  # axis -> the thread's coordinate (a mapped variable, or the streaming loop's variable)
    offsets: dict[str, Poly]  # axis -> the mapping's offset (`x = blockIdx.x*blockDim.x + threadIdx.x + offset`)
    arrays: tuple[StencilArray, ...]
    skipped: tuple[str, ...]  # why the other read-only arrays are not stencils
    exit_blocks: tuple[tuple[int, int], ...] = ()  # `if (edge) { copy; return; }`: their reads stay global reads


def divide(p: Poly, by: Poly) -> tuple[Poly, Poly] | None:
    """(q, r) with p = by*q + r and no monomial of r a multiple of by's leading monomial; None when that is not exact."""
    if by.is_zero:
        return Poly(), p
    c = by.constant()
    if c is not None:
        k = p.constant()
        if k is None:
            return None
        whole = (k + abs(c) // 2) // c
        return Poly.const(whole), Poly.const(k - whole * c)
    lead, coeff = max(((m, v) for m, v in by.terms if m), key=lambda t: (len(t[0]), t[0]))
    q = Poly()
    for mono, value in p.terms:
        rest = list(mono)
        if all(rest.count(n) >= lead.count(n) for n in set(lead)):
            for n in lead:
                rest.remove(n)
            if value % coeff:
                return None
            q = q + Poly.of({tuple(rest): value // coeff})
    r = p - by * q
    return q, r


def analyse(source: bytes, dialect: str, model: KernelModel, fn_body: tuple[int, int], stream: str = "") -> Stencil | str:
    """The stencils of a kernel over its x and y thread axes (and z: a mapped axis, or the loop `stream`)."""
    vars_: dict[str, str] = {}
    offsets: dict[str, Poly] = {}
    for t in model.mapping:
        if t.kind == "global":
            vars_[t.axis], offsets[t.axis] = t.var, t.offset
    if "x" not in vars_ or "y" not in vars_:
        return "needs global thread indices along x and y"
    if stream:
        vars_["z"], offsets["z"] = stream, Poly()
    root = parse(source, dialect).root_node
    body = root.descendant_for_byte_range(*fn_body)
    while body is not None and body.type != "compound_statement":
        body = body.parent
    if body is None:
        return "no kernel body"
    why = _structure(body, source)
    if why:
        return why
    found = _exits(body, model, vars_, offsets, source)
    if isinstance(found, str):
        return found
    returns, blocks = found
    windows = {i for i, lp in enumerate(model.loops) if lp.var != stream}
    written = {a.array for a in model.accesses if a.write}
    moved = _assigned_names(body, source)  # `in += offset;` moves the pointer itself
    arrays: list[StencilArray] = []
    skipped: list[str] = []
    for name, _ty, pointer in model.params:
        reads = [a for a in model.accesses if a.array == name and a.read and not any(s <= a.start < e for s, e in blocks)]
        if not pointer or not reads:
            continue
        if name in written:
            skipped.append(f"{name} is also written by the kernel (in place)")
            continue
        if name in moved:
            skipped.append(f"the kernel moves the pointer {name}")
            continue
        out = _array(name, reads, model, vars_, windows, returns, body, source)
        if isinstance(out, str):
            skipped.append(out)
        else:
            arrays.append(out)
    if not arrays:
        return Stencil(vars_, offsets, (), tuple(skipped), blocks)
    for a in model.accesses:  # threads past the old launch must do nothing: every access bounded from above on x and y
        bounds = _bounds(a, model, vars_, returns, body, source)
        if isinstance(bounds, str):
            return bounds
        for axis in ("x", "y"):
            if not any(b.upper and b.axis == axis and not b.position for b in bounds):
                return f"{a.text} is not under a guard bounding {vars_[axis]} from above"
    return Stencil(vars_, offsets, tuple(arrays), tuple(skipped), blocks)


def _structure(body: Node, data: bytes) -> str:
    top = [c for c in body.named_children if c.type != "comment"]
    tops = {(c.start_byte, c.end_byte) for c in top}
    for n in descendants(body, named=True):
        if n.type in _NOT_ALLOWED:
            return f"the kernel has a {n.type.replace('_statement', '').replace('_', ' ')}"
        if n.type == "return_statement":
            guard = n.parent.parent if n.parent is not None and n.parent.type == "compound_statement" else n.parent
            if guard is None or guard.type != "if_statement" or (guard.start_byte, guard.end_byte) not in tops:
                return "a return other than a top-level early exit"
        if n.type == "binary_expression" and src(data, n.child_by_field_name("operator") or n) in {"&&", "||"} \
                and not _in_condition(n):
            return "a short-circuit && or || outside an if condition"
    return ""


def _assigned_names(body: Node, data: bytes) -> set[str]:
    out = set()
    for n in descendants(body, named=True):
        target = n.child_by_field_name("left" if n.type == "assignment_expression" else "argument") \
            if n.type in {"assignment_expression", "update_expression"} else None
        if target is not None and target.type == "identifier":
            out.add(src(data, target))
    return out


def _in_condition(n: Node) -> bool:
    while n.parent is not None and n.type != "condition_clause":
        n = n.parent
    return n.type == "condition_clause"



def _array(name: str, reads: list[ArrayAccess], model: KernelModel, vars_: dict[str, str], windows: set[int],
           returns: list[Guard], body: Node, data: bytes) -> StencilArray | str:
    shape: tuple[Poly, Poly, Poly] | None = None
    out = []
    for a in reads:
        p = a.flat
        if p is None:
            return f"{a.text} is not one affine index"
        axis_vars = {vars_[ax] for ax in vars_}
        loop_vars = {model.loops[i].var for i in a.nest if i in windows}
        if not p.affine_in(axis_vars | loop_vars):
            return f"{a.text} is not affine in the thread's point"
        if p.coeff(vars_["x"]) != Poly.const(1):
            return f"{a.text} does not step by one element along x"
        pitch = p.coeff(vars_["y"])
        plane = p.coeff(vars_["z"]) if "z" in vars_ else Poly()
        if pitch.is_zero or (pitch.names | plane.names) & (axis_vars | loop_vars):
            return f"{a.text} has no row pitch free of the indices"
        rest = p - Poly.name(vars_["x"]) - pitch * Poly.name(vars_["y"]) - (plane * Poly.name(vars_["z"]) if "z" in vars_ else Poly())
        if rest.names & {vars_[ax] for ax in vars_}:
            return f"{a.text} reads across the thread's point"  # e.g. a transpose
        split = _offsets(rest, pitch, plane, loop_vars)
        if split is None:
            moving = sorted(rest.names & loop_vars)
            return f"the offsets of {a.text} are not constant" + (f" (they move with loop {', '.join(moving)})" if moving else "")
        base, offset = split
        if shape is not None and shape != (base, pitch, plane):
            return f"the reads of {name} differ in base or pitch"
        shape = (base, pitch, plane)
        points = _points(offset, a, model, windows)
        if isinstance(points, str):
            return points
        bounds = _bounds(a, model, vars_, returns, body, data, offset)
        if isinstance(bounds, str):
            return bounds
        out.append(Read(a.start, a.end, offset, points, tuple(bounds)))
    assert shape is not None
    arr = StencilArray(name, shape[0], shape[1], shape[2], tuple(out))
    if len(arr.points()) < 2:
        return f"{name} is read at one point per thread (a footprint of 1 point)"
    return arr


def _offsets(rest: Poly, pitch: Poly, plane: Poly, loop_vars: set[str]) -> tuple[Poly, tuple[Poly, Poly, Poly]] | None:
    """(base, (dz, dy, dx)) of an index's part beyond the thread's point; offsets over window variables only."""
    first = divide(rest, plane)
    if first is None:
        return None
    dz, r = first
    split = divide(r, pitch)
    if split is None:
        return None
    dy, r = split
    dx = Poly(tuple((m, c) for m, c in r.terms if set(m) <= loop_vars))
    base = r - dx
    if any(not d.names <= loop_vars for d in (dz, dy)) or base.names & loop_vars:
        return None
    return base, (dz, dy, dx)


def _points(offset: tuple[Poly, Poly, Poly], a: ArrayAccess, model: KernelModel, windows: set[int]) -> frozenset[tuple[int, int, int]] | str:
    names = sorted(set().union(*(d.names for d in offset)))
    ranges = []
    for n in names:
        lp = next((model.loops[i] for i in a.nest if i in windows and model.loops[i].var == n), None)
        lo = lp.lower.constant() if lp is not None and lp.lower is not None else None
        hi = lp.upper.constant() if lp is not None and lp.upper is not None else None
        if lp is None or lp.step != 1 or lo is None or hi is None or not 0 < hi - lo <= _WINDOW_TRIP:
            return f"the offsets of {a.text} are not constant (loop {n} has no short constant range)"
        ranges.append(range(lo, hi))
    pts = set()
    for values in itertools.product(*ranges):
        env = dict(zip(names, values))
        pts.add(tuple(_value(d, env) for d in offset))
    return frozenset(pts)  # type: ignore[arg-type]


def _value(p: Poly, env: dict[str, int]) -> int:
    total = 0
    for mono, c in p.terms:
        for n in mono:
            c *= env[n]
        total += c
    return total


def _bounds(a: ArrayAccess, model: KernelModel, vars_: dict[str, str], returns: list[Guard], body: Node, data: bytes,
            offset: tuple[Poly, Poly, Poly] | None = None) -> list[Bound] | str:
    """The guards around access `a` as bounds on the thread's point or on the point read."""
    node = body.descendant_for_byte_range(a.start, a.end)
    guards = [g for g in returns if g.end <= a.start]
    while node is not None and node != body:
        parent = node.parent
        if parent is not None and parent.type == "if_statement":
            if parent.child_by_field_name("condition") == node:
                return f"{a.text} is read in an if condition"
            if parent.child_by_field_name("consequence") != node:
                return f"{a.text} sits in an else branch"
            if any(g.start == parent.start_byte for g in returns):  # inside an exit's own block: the exits before it hold
                node = parent
                continue
            g = next((g for g in model.guards if g.start == parent.start_byte and g.kind == "block"), None)
            if g is None:
                return f"the condition around {a.text} is not a set of bounds"
            guards.append(g)
        node = parent
    by_var = {v: ax for ax, v in vars_.items()}
    values = dict(model.values)
    out: list[Bound] = []
    for g in guards:
        if g.kind != "return" and len(g.upper) + len(g.lower) != _terms(g, body, data):  # early exits are read in full
            return f"the guard `{g.condition}` is not only bounds on indices"
        for (var, value), upper in [(u, True) for u in g.upper] + [(lo, False) for lo in g.lower]:
            if value.names & (set(vars_.values()) | {lp.var for lp in model.loops}):
                return f"the guard `{g.condition}` bounds {var} by an index"
            if var in by_var:
                out.append(Bound(by_var[var], upper, value, False))
                continue
            p = values.get(var)
            hit = next(((ax, p - Poly.name(vars_[ax])) for ax in vars_ if p is not None and p.coeff(vars_[ax]) == Poly.const(1)), None)
            if hit is None or hit[1].names & set(vars_.values()):
                return f"the guard `{g.condition}` bounds {var}, which is not a coordinate"
            ax, shift = hit
            if shift.constant() is not None:  # x + 1 < n: a bound on the thread
                out.append(Bound(ax, upper, value - shift, False))
            elif offset is None:  # only the thread's bounds are asked for
                continue
            elif shift == offset[AXES3.index(ax)]:  # xx = x + dx: a bound on the point read
                out.append(Bound(ax, upper, value, True))
            else:
                return f"the guard `{g.condition}` bounds {var}, which is not the point read"
    return out


_EXIT = {"<": (False, 0), "<=": (False, 1), ">": (True, 1), ">=": (True, 0)}  # exit on v OP b -> v >= b + k, v < b + k


def _exits(body: Node, model: KernelModel, vars_: dict[str, str], offsets: dict[str, Poly],
           data: bytes) -> tuple[list[Guard], tuple[tuple[int, int], ...]] | str:
    """The top-level early exits as the bounds they let through, in order; `v == b` at an end of v's range moves that
    end (`i == 0 || i == n - 1` after `i >= n`: 1 <= i < n - 1). Also the exits that run statements before returning."""
    by_var = {v: ax for ax, v in vars_.items()}
    values = dict(model.values)
    opaque = _assigned_names(body, data) | {lp.var for lp in model.loops} | set(vars_.values())
    lows: dict[str, list[Poly]] = {v: [offsets[ax]] for ax, v in vars_.items()}
    highs: dict[str, list[Poly]] = {v: [] for v in vars_.values()}
    guards, blocks = [], []
    for c in body.named_children:
        if c.type != "if_statement" or not any(n.type == "return_statement" for n in descendants(c, named=True)):
            continue
        cons, cond = c.child_by_field_name("consequence"), c.child_by_field_name("condition")
        last = cons.named_children[-1] if cons is not None and cons.type == "compound_statement" and cons.named_children else cons
        if c.child_by_field_name("alternative") is not None or last is None or last.type != "return_statement":
            return "an early exit with an else branch, or one that does not end in its return"
        if cons is not None and cons.type == "compound_statement" and len(cons.named_children) > 1:
            blocks.append((cons.start_byte, cons.end_byte))
        up, low = [], []
        for t in _split_terms(cond.named_children[-1] if cond is not None and cond.named_children else None, "||", data):
            op = src(data, t.child_by_field_name("operator") or t) if t.type == "binary_expression" else ""
            left, right = t.child_by_field_name("left"), t.child_by_field_name("right")
            if left is not None and right is not None and left.type != "identifier" and right.type == "identifier":
                left, right, op = right, left, {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
            bound = poly_of(right, data, values.get) if right is not None else None
            name = src(data, left) if left is not None and left.type == "identifier" else ""
            var, shift = (name, Poly()) if name in by_var else _shifted(values.get(name), vars_)
            if op not in {*_EXIT, "=="} or bound is None or not var or bound.names & opaque:
                return f"the early exit `{src(data, cond).strip()}` is not a set of bounds" if cond is not None else "an early exit"
            bound = bound - shift
            if op == "==" and any(lo == bound for lo in lows[var]):
                pair = (var, bound + Poly.const(1))
                lows[var].append(pair[1])
                low.append(pair)
            elif op == "==" and any(hi == bound + Poly.const(1) for hi in highs[var]):
                highs[var].append(bound)
                up.append((var, bound))
            elif op == "==":
                return f"the early exit on {name} == {bound.text()} is not at an end of {name}'s range"
            else:
                upper, k = _EXIT[op]
                (highs if upper else lows)[var].append(bound + Poly.const(k))
                (up if upper else low).append((var, bound + Poly.const(k)))
        guards.append(Guard(src(data, cond) if cond is not None else "", "return", tuple(up), tuple(low), c.start_byte, c.end_byte))
    return guards, tuple(blocks)


def _shifted(p: Poly | None, vars_: dict[str, str]) -> tuple[str, Poly]:
    """(thread variable, constant) when p is a thread variable plus a constant (`xx = x + 1`), else ("", 0)."""
    for v in vars_.values():
        if p is not None and p.coeff(v) == Poly.const(1) and (p - Poly.name(v)).constant() is not None:
            return v, p - Poly.name(v)
    return "", Poly()


def _split_terms(node: Node | None, op: str, data: bytes) -> list[Node]:
    out, stack = [], [node] if node is not None else []
    while stack:
        n = stack.pop()
        while n.type == "parenthesized_expression" and len(n.named_children) == 1:
            n = n.named_children[0]
        if n.type == "binary_expression" and src(data, n.child_by_field_name("operator") or n) == op:
            stack += [c for c in (n.child_by_field_name("right"), n.child_by_field_name("left")) if c is not None]
        else:
            out.append(n)
    return out


def _terms(g: Guard, body: Node, data: bytes) -> int:
    node = body.descendant_for_byte_range(g.start, g.end)
    while node is not None and not (node.type == "if_statement" and node.start_byte == g.start):
        node = node.parent
    cond = node.child_by_field_name("condition") if node is not None else None
    value = cond.named_children[-1] if cond is not None and cond.named_children else None
    op = "||" if g.kind == "return" else "&&"
    count, stack = 0, [value] if value is not None else []
    while stack:
        n = stack.pop()
        while n.type == "parenthesized_expression" and len(n.named_children) == 1:
            n = n.named_children[0]
        if n.type == "binary_expression" and src(data, n.child_by_field_name("operator") or n) == op:
            stack += [c for c in (n.child_by_field_name("left"), n.child_by_field_name("right")) if c is not None]
        else:
            count += 1
    return count


def rectangles(points: frozenset[tuple[int, int]]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Maximal rectangles ((y0, y1), (x0, x1)), inclusive, whose union is exactly `points`."""
    rows: dict[int, set[int]] = {}
    for y, x in points:
        rows.setdefault(y, set()).add(x)
    found = set()
    for y, xs in rows.items():
        for x0, x1 in _runs(sorted(xs)):
            span = set(range(x0, x1 + 1))
            lo = hi = y
            while span <= rows.get(lo - 1, set()):
                lo -= 1
            while span <= rows.get(hi + 1, set()):
                hi += 1
            found.add(((lo, hi), (x0, x1)))
    return sorted(r for r in found if not any(o != r and o[0][0] <= r[0][0] and r[0][1] <= o[0][1] and o[1][0] <= r[1][0]
                                              and r[1][1] <= o[1][1] for o in found))


def _runs(xs: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for x in xs:
        if out and out[-1][1] == x - 1:
            out[-1] = (out[-1][0], x)
        else:
            out.append((x, x))
    return out
