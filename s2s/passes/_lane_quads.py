"""The lanes of a row reading it in 16-byte words (helper of split-reduction's lanes mode and warp-rows).

After a row walk is split over `lanes` threads (`for (k = S + lane; k < B; k += lanes) acc += P[e(k)] * Q[f(k)];`) each
lane still issues one 4-byte load per array and trip. gemv_rows and row_sums then launch 4096 warps: 131072 threads
on an H200 that holds 270336, each with one load of the matrix in flight, about 0.5 MB over the GPU against the
2.5 MB or so that 4.2 TB/s at ~600 ns latency needs (57-58% of the copy bandwidth measured). Here lane l takes the
quad k = S + 4 l + 4 lanes t instead, one float4 load per array: four times the bytes in flight, the same rows and
lanes. Every array must step by one element with k (checked numerically, macros expanded: passes/vector_loads.py)
and start 16-byte aligned at k = S for this row (checked at run time: a row-major matrix whose row length is not a
multiple of 4 has misaligned rows, which take the original loop); the elements past the last whole quad follow one
per lane. The order of additions changes (within the MEP's tolerance), as the split itself already did.
"""
from __future__ import annotations

import re

from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.textsplit import split_top_level

from ._common import fresh
from ._elementwise import elem_type
from .vector_loads import _FUNC_MACRO, _TERM, _expand, unit_stride


def lane_quads(facts: KernelFacts, source: bytes, k: str, start: str, cond: str, lanes: int, lane: str, stmt: str) -> list[str] | None:
    """Lines replacing `for (int k = start + lane; cond; k += lanes) stmt` (stmt `acc += TERM;`, `acc -= TERM;` or
    `acc = acc + TERM;`, TERM a product of float array elements), or None where the loop does not qualify."""
    text = source.decode("utf-8", "replace")
    bound = re.fullmatch(rf"\s*{re.escape(k)}\s*<\s*(.+?)\s*", cond, re.S)
    m = re.fullmatch(r"\s*(\w+)\s*(\+=|-=)\s*(.+?);\s*", stmt, re.S) or re.fullmatch(r"\s*(\w+)\s*=\s*(\1)\s*\+\s*(.+?);\s*", stmt, re.S)
    if bound is None or m is None or re.search(rf"\b{re.escape(k)}\b", bound.group(1)):
        return None
    acc, op = m.group(1), "-=" if m.group(2) == "-=" else "+="
    macros = {f.group(1): ([p.strip() for p in f.group(2).split(",")], f.group(3)) for f in _FUNC_MACRO.finditer(text)}
    arrays: list[tuple[str, str]] = []
    for factor in split_top_level(m.group(3), "*"):
        t = _TERM.match(factor)
        p = facts.param(t.group(1)) if t is not None else None
        if t is None or p is None or not p.pointer or elem_type(p.type) != "float" or acc in t.group(2):
            return None
        if not unit_stride(_expand(t.group(2), macros), k):
            return None
        arrays.append((t.group(1), t.group(2).strip()))
    if not arrays:
        return None
    end, q = fresh(facts, source, f"{k}_end"), fresh(facts, source, "w")
    at_start = rf"\b{re.escape(k)}\b"
    first = [f"reinterpret_cast<unsigned long long>(&{a}[{re.sub(at_start, f'({start})', e)}])" for a, e in arrays]
    words = [f"const float4 {q}{n} = *reinterpret_cast<const float4*>(&{a}[{e}]);" for n, (a, e) in enumerate(arrays)]
    adds = [f"{acc} {op} {' * '.join(f'{q}{n}.{c}' for n in range(len(arrays)))};" for c in "xyzw"]
    b = bound.group(1)
    return [f"if ((({' | '.join(first)}) & 15) == 0) {{",
            f"    const int {end} = ({start}) + (({b}) - ({start})) / 4 * 4;",
            f"    for (int {k} = ({start}) + 4 * {lane}; {k} < {end}; {k} += {4 * lanes}) {{",
            *(f"        {w}" for w in words + adds),
            "    }",
            f"    for (int {k} = {end} + {lane}; {k} < ({b}); {k} += {lanes})",
            f"        {stmt.strip()}",
            "} else {",
            f"    for (int {k} = ({start}) + {lane}; {cond.strip()}; {k} += {lanes})",
            f"        {stmt.strip()}",
            "}"]
