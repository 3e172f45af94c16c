"""The lanes of a row reading it in 16-byte words (helper of split-reduction's lanes mode and warp-rows).

After a row walk is split over `lanes` threads (`for (k = S + lane; k < B; k += lanes) acc += P[e(k)] * Q[f(k)];`) each
lane still issues one 4-byte load per array and trip. gemv_rows and row_sums then launch 4096 warps: 131072 threads
on an H200 that holds 270336, each with one load of the matrix in flight, about 0.5 MB over the GPU against the
2.5 MB or so that 4.2 TB/s at ~600 ns latency needs (57-58% of the copy bandwidth measured). Here lane l takes the
quad k = S + 4 l + 4 lanes t instead, one float4 load per array: four times the bytes in flight, the same rows and
lanes. Every array must step by one element with k (checked numerically, macros expanded: passes/reductions/vector_loads.py)
and start 16-byte aligned at k = S for this row (checked at run time: a row-major matrix whose row length is not a
multiple of 4 has misaligned rows, which take the original loop); the elements past the last whole quad follow one
per lane. The order of additions changes (within the MEP's tolerance), as the split itself already did.

A gathered factor `P[Q[e]]` (CSR SpMV's `x[cols[k]]`) qualifies where Q is an int array whose index e steps by one:
Q is read in int4 words like the other arrays and P at each word's four components (`x[w1.x]`): on the zoo's CSR
matrix, 4 lanes a row with cols and vals in 16-byte words ran 83 us against 99 us for 8 lanes of 4-byte loads
(issue 15, spmv probe on the H200, the app's banded data). Where every array is read at one index (vals[k] and
cols[k], a row sum's A[j*n+i]) their words line up at any start: the row's elements up to the first 16-byte boundary
go one per lane first, so rows of any length and offset take the words.
"""
from __future__ import annotations

import re

from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.textsplit import split_top_level

from ..common.thread_index import elem_type
from ..common.tree import fresh
from ._unit_stride import FUNC_MACRO, TERM, expand_macros, unit_stride


def lane_quads(facts: KernelFacts, source: bytes, k: str, start: str, cond: str, lanes: int, lane: str, stmt: str) -> list[str] | None:
    """Lines replacing `for (int k = start + lane; cond; k += lanes) stmt` (stmt `acc += TERM;`, `acc -= TERM;` or
    `acc = acc + TERM;`, TERM a product of float array elements), or None where the loop does not qualify."""
    text = source.decode("utf-8", "replace")
    bound = re.fullmatch(rf"\s*{re.escape(k)}\s*<\s*(.+?)\s*", cond, re.S)
    m = re.fullmatch(r"\s*(\w+)\s*(\+=|-=)\s*(.+?);\s*", stmt, re.S) or re.fullmatch(r"\s*(\w+)\s*=\s*(\1)\s*\+\s*(.+?);\s*", stmt, re.S)
    if bound is None or m is None or re.search(rf"\b{re.escape(k)}\b", bound.group(1)):
        return None
    acc, op = m.group(1), "-=" if m.group(2) == "-=" else "+="
    macros = {f.group(1): ([p.strip() for p in f.group(2).split(",")], f.group(3)) for f in FUNC_MACRO.finditer(text)}
    arrays: list[tuple[str, str, str, str]] = []  # (array read in words, its index, word type, gathered array or "")
    for factor in split_top_level(m.group(3), "*"):
        word = _word(facts, factor, acc, k, macros)
        if word is None:
            return None
        arrays.append(word)
    if not arrays:
        return None
    end, q = fresh(facts, source, f"{k}_end"), fresh(facts, source, "w")
    at_start = rf"\b{re.escape(k)}\b"
    first = [f"reinterpret_cast<unsigned long long>(&{a}[{re.sub(at_start, f'({start})', e)}])" for a, e, _, _ in arrays]
    words = [f"const {ty} {q}{n} = *reinterpret_cast<const {ty}*>(&{a}[{e}]);" for n, (a, e, ty, _) in enumerate(arrays)]
    adds = [f"{acc} {op} {' * '.join(f'{g}[{q}{n}.{c}]' if g else f'{q}{n}.{c}' for n, (_, _, _, g) in enumerate(arrays))};"
            for c in "xyzw"]
    b = bound.group(1)
    head = _peeled(facts, source, arrays, k, start, b, lane, lanes, stmt)
    w0 = head[0] if head else start  # the first element read in words
    if head:
        first = [f"reinterpret_cast<unsigned long long>(&{a}[{re.sub(at_start, f'({w0})', e)}])" for a, e, _, _ in arrays]
    return [*head[1:2], f"if ((({' | '.join(first)}) & 15) == 0) {{", *head[2:],
            f"    const int {end} = ({w0}) + (({b}) - ({w0})) / 4 * 4;",
            f"    for (int {k} = ({w0}) + 4 * {lane}; {k} < {end}; {k} += {4 * lanes}) {{",
            *(f"        {w}" for w in words + adds),
            "    }",
            f"    for (int {k} = {end} + {lane}; {k} < ({b}); {k} += {lanes})",
            f"        {stmt.strip()}",
            "} else {",
            f"    for (int {k} = ({start}) + {lane}; {cond.strip()}; {k} += {lanes})",
            f"        {stmt.strip()}",
            "}"]


def _peeled(facts: KernelFacts, source: bytes, arrays: list[tuple[str, str, str, str]], k: str, start: str, b: str, lane: str,
            lanes: int, stmt: str) -> list[str]:
    """Where every array is read at one index (CSR's vals[k], cols[k]: their words line up), the row's first elements
    up to a 16-byte boundary go one per lane first, so rows of any length and start take the words: [the first word's
    k, its declaration, the head loop]; else [] (each array's own index: gemv's A[i*n+j] and x[j] need not line up)."""
    if len({e for _, e, _, _ in arrays}) != 1:
        return []
    a, e = arrays[0][0], arrays[0][1]
    h = fresh(facts, source, f"{k}_head")
    at = re.sub(rf"\b{re.escape(k)}\b", f"({start})", e)
    return [h, f"const int {h} = ({start}) + (int)((16u - (reinterpret_cast<unsigned long long>(&{a}[{at}]) & 15u)) & 15u) / 4;",
            f"    for (int {k} = ({start}) + {lane}; {k} < {h} && {k} < ({b}); {k} += {lanes})",
            f"        {stmt.strip()}"]


_WORDS = {"float": "float4", "int": "int4", "unsigned int": "uint4"}


def _word(facts: KernelFacts, factor: str, acc: str, k: str,
          macros: dict[str, tuple[list[str], str]]) -> tuple[str, str, str, str] | None:
    """`A[e]` (float A, e steps by one with k) or `P[Q[e]]` (float P gathered at int Q, e steps by one) as
    (array read in words, e, word type, gathered array or ""), else None."""
    t = TERM.match(factor)
    p = facts.param(t.group(1)) if t is not None else None
    reads_acc = re.compile(rf"\b{re.escape(acc)}\b").search
    if t is None or p is None or not p.pointer or elem_type(p.type) != "float" or reads_acc(t.group(2)) or not _balanced(t.group(2)):
        return None
    inner = TERM.match(t.group(2))
    if inner is not None and _balanced(inner.group(2)) and k not in re.findall(r"\w+", inner.group(1)):
        qp = facts.param(inner.group(1))
        if qp is None or not qp.pointer or elem_type(qp.type) not in _WORDS or reads_acc(inner.group(2)) \
                or not unit_stride(expand_macros(inner.group(2), macros), k):
            return None
        return inner.group(1), inner.group(2).strip(), _WORDS[elem_type(qp.type)], t.group(1)
    if not unit_stride(expand_macros(t.group(2), macros), k):
        return None
    return t.group(1), t.group(2).strip(), "float4", ""


def _balanced(expr: str) -> bool:
    """No bracket of expr closes one it did not open (`a[k] + b[k` from `x[a[k] + b[k]]` fails)."""
    depth = 0
    for ch in expr:
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0
