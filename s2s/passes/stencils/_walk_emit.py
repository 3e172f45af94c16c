"""walk-registers{cols=V}'s code: the cells' registers, their loads (words where they can be), the points' copies."""
from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

from s2s.lang.edits import Refused
from s2s.lang.kernel_facts import KernelFacts, Loop
from s2s.lang.parsing import src

from ..common.index_steps import word
from ..common.tree import fresh, indent_of, single_store, walk

MAX_WINDOW = 9
_SIZE = {"float": 4, "double": 8, "int": 4, "unsigned int": 4, "uint": 4}
_VNAME = {"float": "float", "double": "double", "int": "int", "unsigned int": "uint", "uint": "uint"}


def emit(source: bytes, facts: KernelFacts, lp: Loop, node: Node, reads: list[tuple[Node, str, str]],
         cell_of: dict[tuple[int, int], tuple[int, int, int]], rep_text: dict[tuple[int, int], tuple[str, int]],
         lines: list[tuple[str, tuple[int, ...]]], ren: list[dict[str, str]], rename: Callable[[str, int], str],
         locs: list[Node], rest: list[Node], xd: Node, xm: re.Match[str], x0: str, guard: tuple[Node, str] | None,
         cols: int, ety_of: Callable[[str], str],
         consecutive: Callable[[str], bool], steady: bool) -> tuple[list[tuple[int, int, str]], str, str] | Refused:
    """(replacements (start, end, text), the text to put before the loop, a note)."""
    if guard is None:
        return Refused(f"no `if (...) return;` guard on `{xm.group(1)}`: a point past the launch's x would be stored")
    body = node.child_by_field_name("body")
    assert body is not None
    cells = sorted(set(cell_of.values()))
    needers: dict[tuple[int, int, int], set[int]] = {}
    for (_, i), c in cell_of.items():
        needers.setdefault(c, set()).add(i)
    ms_of: dict[tuple[int, int], list[int]] = {}
    for ln, m, j in cells:
        ms_of.setdefault((ln, j), []).append(m)
    rotated = {lj: (ms[0], ms[-1]) for lj, ms in ms_of.items()
               if len(ms) >= 2 and ms[-1] - ms[0] + 1 == len(ms) <= MAX_WINDOW}
    base = fresh(facts, source, "wc")
    reg = {c: f"{base}{n}" for n, c in enumerate(cells)}
    act = [fresh(facts, source, f"in{i}") for i in range(cols)]
    full, flag, tmp = fresh(facts, source, "full"), fresh(facts, source, "first"), fresh(facts, source, "t")
    ind = indent_of(source, node.start_byte)
    sind = ind + "    "

    def who(c: tuple[int, int, int]) -> set[int]:
        lj = (c[0], c[2])
        if lj in rotated:
            return {i for (ln, m, j), s in needers.items() if (ln, j) == lj for i in s}
        return needers[c]

    def index(ln: int, m: int, j: int) -> str:
        text, jt = rep_text[(ln, m)]
        return text if j == jt else f"({text}) {'+' if j > jt else '-'} {abs(j - jt)}"

    def loads(group: list[tuple[int, int, int]], pre: str, hoisted: str = "") -> tuple[list[str], str]:
        """The group's cells: its whole V-wide runs as words under one test (all points inside, every word's address
        aligned: `hoisted` where that was found at the first step), else as scalars; the cells in no run as scalars."""
        rows: dict[tuple[int, int], set[int]] = {}
        for ln, m, j in group:
            rows.setdefault((ln, m), set()).add(j)
        runs, left, tests = [], [], [full]
        for (ln, m), js in sorted(rows.items()):
            ty = ety_of(lines[ln][0])
            size = _SIZE.get(ty, 0)
            starts = [a for a in sorted(js) if size and cols * size <= 16 and a % cols == 0
                      and all(a + t in js for t in range(cols))]
            runs += [(ln, m, a, ty) for a in starts]
            left += [(ln, m, j, ty) for j in sorted(js - {a + t for a in starts for t in range(cols)})]
            if facts.dialect != "opencl":
                tests += [f"((size_t)({lines[ln][0]} + ({index(ln, m, a)})) & {cols * size - 1}) == 0" for a in starts]
        out = []
        if runs:
            out.append(f"{pre}if ({hoisted or ' && '.join(tests)}) {{")
            for ln, m, a, ty in runs:
                vt, at = f"{_VNAME[ty]}{cols}", f"{lines[ln][0]} + ({index(ln, m, a)})"
                get = f"vload{cols}(0, {at})" if facts.dialect == "opencl" else f"*(const {vt}*)({at})"
                parts = " ".join(f"{reg[(ln, m, a + t)]} = {tmp}.{'xyzw'[t]};" for t in range(cols))
                out.append(f"{pre}    {{ {vt} {tmp} = {get}; {parts} }}")
            out.append(f"{pre}}} else {{")
            out += [f"{pre}    {scalar(ln, m, a + t, ty)}" for ln, m, a, ty in runs for t in range(cols)]
            out.append(f"{pre}}}")
        return out + [f"{pre}{scalar(ln, m, j, ty)}" for ln, m, j, ty in left], " && ".join(tests) if runs else ""

    def scalar(ln: int, m: int, j: int, ty: str) -> str:
        cond = " || ".join(act[i] for i in sorted(who((ln, m, j))))
        return f"{reg[(ln, m, j)]} = ({cond}) ? {lines[ln][0]}[{index(ln, m, j)}] : ({ty})0;"

    firsts = [(ln, m, j) for (ln, j), (lo, hi) in rotated.items() for m in range(lo, hi)]
    each = [c for c in cells if (c[0], c[2]) not in rotated or c[1] == rotated[(c[0], c[2])][1]]
    text = ["{"] + [sind + rename(src(source, s), i) for i in range(cols) for s in locs]
    vec = fresh(facts, source, "aligned") if firsts and steady else ""  # the words' alignment moves by whole words a step
    step_loads, test = loads(each, sind, vec)
    if firsts:
        text += [f"{sind}if ({flag}) {{"] + loads(firsts, sind + "    ")[0] + [f"{sind}    {flag} = false;"]
        text += [f"{sind}    {vec} = {test or 'false'};"] if vec else []
        text.append(f"{sind}}}")
    text += step_loads
    spans = {(s.start_byte, s.end_byte): r for r, (s, _, _) in enumerate(reads)}
    def render(s: Node, i: int) -> str:
        pieces, at = [], s.start_byte
        for n in sorted(walk(s), key=lambda n: n.start_byte):
            r = spans.get((n.start_byte, n.end_byte))
            if r is None or n.start_byte < at or n.type != "subscript_expression":
                continue
            pieces += [rename(source[at:n.start_byte].decode(), i), reg[cell_of[(r, i)]]]
            at = n.end_byte
        return "".join(pieces) + rename(source[at:s.end_byte].decode(), i)
    store = _word_store(source, rest, ety_of, cols, consecutive)
    pind = sind
    if store is not None:
        arr, idx, rhs, ty = store
        vt, at = f"{_VNAME[ty]}{cols}", f"{arr} + ({render(idx, 0)})"
        sets = f"\n{sind}    ".join(f"{tmp}.{'xyzw'[i]} = {render(rhs, i)};" for i in range(cols))
        put = f"vstore{cols}({tmp}, 0, {at});" if facts.dialect == "opencl" else f"*({vt}*)({at}) = {tmp};"
        test = full if facts.dialect == "opencl" else f"{full} && ((size_t)({at}) & {cols * _SIZE[ty] - 1}) == 0"
        text += [f"{sind}if ({test}) {{", f"{sind}    {vt} {tmp};", f"{sind}    {sets}", f"{sind}    {put}", f"{sind}}} else {{"]
        pind = sind + "    "
    for i in range(cols):
        text.append(f"{pind}if ({act[i]}) {{")
        text += [pind + "    " + render(s, i) for s in rest]
        text.append(f"{pind}}}")
    if store is not None:
        text.append(f"{sind}}}")
    for (ln, j), (lo, hi) in sorted(rotated.items()):
        text += [f"{sind}{reg[(ln, m, j)]} = {reg[(ln, m + 1, j)]};" for m in range(lo, hi)]
    text.append(ind + "}")
    decl: dict[str, list[str]] = {}
    for c in cells:
        decl.setdefault(ety_of(lines[c[0]][0]), []).append(reg[c])
    pre = "".join(f"{ty} {', '.join(rs)};\n{ind}" for ty, rs in decl.items()) + f"bool {flag} = true;\n{ind}"
    pre += f"bool {vec} = false;\n{ind}" if vec else ""
    xs = src(source, xd)
    xtext = xs[:xm.start(1)] + x0 + xs[xm.end(1):xm.start(2)] + f"({xm.group(2)}) * {cols}" + xs[xm.end(2):]
    gs, cond = guard
    gind = indent_of(source, gs.start_byte)
    gtext = "".join(f"const bool {act[i]} = !({re.sub(word(xm.group(1)), ren[i][xm.group(1)], cond)});\n{gind}"
                    for i in range(cols))
    gtext += f"if (!({' || '.join(act)}))\n{gind}    return;\n{gind}const bool {full} = {' && '.join(act)};"
    reps = [(xd.start_byte, xd.end_byte, xtext), (gs.start_byte, gs.end_byte, gtext),
            (body.start_byte, body.end_byte, "\n".join(text))]
    words = sum(1 for line in text if line.strip().startswith("{ ") and "t = " in line)
    return reps, pre, (f"{cols} points of `{xm.group(1)}` a thread, {len(cells)} registers, {len(rotated)} rotated along "
                       f"`{lp.var}`, {words} word loads" + (", word stores" if store is not None else ""))


def _word_store(source: bytes, rest: list[Node], ety_of: Callable[[str], str], cols: int,
                consecutive: Callable[[str], bool]) -> tuple[str, Node, Node, str] | None:
    """(array, index node, right side node, element type) where the points' work is one store `a[i] = e;` whose V
    points' indices are consecutive, so that it can be one V-wide word."""
    store = single_store(source, rest)
    if store is None:
        return None
    left, right = store
    head, idx = left.child_by_field_name("argument"), left.child_by_field_name("indices")
    if head is None or idx is None or head.type != "identifier":
        return None
    ty = ety_of(src(source, head))
    inner = idx.named_children[0] if idx.named_children else None
    if inner is None or ty not in _SIZE or cols * _SIZE[ty] > 16 or not consecutive(src(source, inner)):
        return None
    return src(source, head), inner, right, ty
