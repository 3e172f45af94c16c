"""Whether the iterations of a loop, across the threads of a launch, touch disjoint memory: from the kernel model.

Each thread `v` runs iterations `w` of a loop; the question is whether every (v, w) pair may run in its own thread.
A write at an affine index `a*v + b*w + c` and another access of the same array collide across pairs only when
their indices can be equal for two different pairs. Indices are read as 2-D positions (one coefficient a unit,
the other a row length that exceeds the unit-stride index, as in every row- or column-major matrix):
  - the same form: equal only for the same pair;
  - the mirrored form (`sym[v][w]` and `sym[w][v]`): equal for (v, w) and (w, v), which is one pair only when the
    loop's range is triangular (w from v upwards: w >= v, so w == v);
  - anything else (a non-affine index, an index without w, a scalar accumulated across iterations) is refused.
"""
from __future__ import annotations

from .affine import Poly
from .kernel_model import ArrayAccess, KernelModel


def _form(p: Poly | None, v: str, w: str) -> tuple[Poly, Poly, Poly] | None:
    """(coefficient of v, coefficient of w, the rest) of an index affine in v and w."""
    if p is None or not p.affine_in({v, w}):
        return None
    rest = p.drop({v, w})
    if rest.names & {v, w} or (p.coeff(v).names | p.coeff(w).names) & {v, w}:
        return None
    return p.coeff(v), p.coeff(w), rest


def _positional(a: Poly, b: Poly) -> bool:
    """One coefficient a unit, the other a row length (a name, not a number), or v absent altogether."""
    units = [x for x in (a, b) if x.constant() in {1, -1}]
    return (len(units) == 1 and any(x.constant() is None for x in (a, b))) or (a.is_zero and b.constant() in {1, -1})


def independent(model: KernelModel, start: int, end: int, v: str, w: str, triangular: bool) -> str:
    """"" when the iterations over `w` of the body at [start, end) are independent across (v, w), else why not."""
    inside = [a for a in model.accesses if start <= a.start and a.end <= end]
    written = {a.array for a in inside if a.write}
    for arr in sorted(written):
        if not model.pointer(arr):
            return f"{arr} is written but is not a kernel parameter"
        group: list[ArrayAccess] = [a for a in inside if a.array == arr]
        if any(len(a.index) != 1 for a in group):
            return f"{arr} is indexed in several dimensions"
        forms = [_form(a.flat, v, w) for a in group]
        for a, f in zip(group, forms):
            if f is None:
                return f"{a.text}: the index is not affine in {v} and {w}"
            if a.write and (f[1].is_zero or not _positional(f[0], f[1])):
                return f"{a.text}: every iteration over {w} must write its own element"
        for a, f in zip(group, forms):
            for b, g in zip(group, forms):
                if not a.write or f is None or g is None or f == g:
                    continue
                mirrored = f[0] == g[1] and f[1] == g[0] and f[2] == g[2]
                if not mirrored:
                    return f"{a.text} and {b.text} may touch one element from two iterations"
                if not triangular:
                    return f"{a.text} and {b.text} mirror each other over a square range: two threads would write one element"
    return ""
