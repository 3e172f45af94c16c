"""thread-coarsen's `jam` form: a block takes over the points of `factor` neighbouring blocks along one axis, and the
kernel's one loop runs once for all of them (unroll and jam), so each element the loop loads serves every point.

For a kernel whose threads each loop over data that does not depend on the point (Parboil's cp: every grid point
sums over a `__constant__` table of atoms). The launch is not changed: blocks `blockIdx * factor + c` (c < factor)
are done by block `blockIdx`, blocks past `gridDim / factor` exit at once, and `gridDim`/`blockDim` keep their
meaning, so the kernel is exact at every launch the original is exact at, whatever the size or the block. The
point's locals (the index and what is declared after it) become arrays of `factor` registers. The kernel model
must show the points independent: every array the kernel writes is touched at one index only, which moves
with the index by a constant step.
"""
from __future__ import annotations

import re

from tree_sitter import Node

from s2s.lang.affine import Poly
from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.kernel_model import KernelModel, kernel_model
from s2s.lang.parsing import src

from ..common.tree import body_node, fresh, indent_of, statements, walk

_JUMPS = re.compile(r"\b(return|break|goto|continue)\b")
_BUILTIN = {"cuda": ("blockIdx.{a}", "gridDim.{a}"), "opencl": ("get_group_id({d})", "get_num_groups({d})")}


def jam(source: bytes, facts: KernelFacts, axis: str, factor: int) -> Rewrite | Refused:
    model = kernel_model(source, facts.dialect, facts.name)
    var = model.var_for(axis) if model is not None else ""
    if model is None or not var:
        return Refused(f"no global index along {axis}")
    stmts = statements(body_node(source, facts))
    at = next((i for i, s in enumerate(stmts) if s.type == "declaration" and _names(source, s) == [var]), -1)
    tm = next(t for t in model.mapping if t.var == var)
    if at < 0 or _JUMPS.search(src(source, stmts[at])):
        return Refused(f"`{var}` must be declared alone at the top of the body")
    rest = stmts[at + 1 :]
    loops = [i for i, s in enumerate(rest) if s.type in {"for_statement", "while_statement", "do_statement"}]
    if len(loops) != 1 or rest[loops[0]].type != "for_statement":
        return Refused("needs exactly one top-level for loop after the index (the loop whose loads the points share)")
    before, loop, after = rest[: loops[0]], rest[loops[0]], rest[loops[0] + 1 :]
    if _JUMPS.search("".join(src(source, s) for s in stmts)) or re.search(rf"\b(?:threadIdx|blockIdx)\.{axis}\b|get_(?:local|group|global)_id\s*\(\s*{'xyz'.index(axis)}",
                                         "".join(src(source, s) for s in rest)):
        return Refused(f"jumps, or the thread's position along {axis} used beyond the index: the points would not be independent")
    if any(s.type != "declaration" for s in stmts[:at]) or any(s.type not in {"declaration", "expression_statement"} for s in before + after):
        return Refused("only declarations before the index, and declarations or expressions around the loop")
    counter = _counter(source, loop)
    point = [var] + [n for s in before if s.type == "declaration" for n in _names(source, s) if n != counter]
    if any(counter in _names(source, s) and len(_names(source, s)) > 1 for s in before if s.type == "declaration"):
        return Refused(f"the loop's counter {counter} must be declared alone")
    loop_body = loop.child_by_field_name("body")
    if loop_body is None or set(point) & set(re.findall(r"\w+", source[loop.start_byte : loop_body.start_byte].decode())):
        return Refused("the loop's bounds must be the same for every point")
    inner_decls = {src(source, n) for n in walk(loop_body) if n.type == "identifier" and n.parent is not None
                   and n.parent.type in {"init_declarator", "declaration"}}
    if inner_decls & set(point):
        return Refused("the loop body declares a name of the point's again")
    if any(len(_names(source, s)) != len(s.children_by_field_name("declarator")) for s in before if s.type == "declaration"):
        return Refused("a declaration of an array or a pointer before the loop")
    shared = [n for s in stmts[:at] for n in _names(source, s)]
    body = "".join(src(source, s) for s in before + [loop] + after)
    if any(re.search(rf"(?<![\w.]){re.escape(n)}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+\s*{n}\b|\b{n}\s*\+\+", body) for n in shared):
        return Refused("a variable declared before the index is changed after it: it would carry over between points")
    for acc in model.accesses:
        if acc.write:
            same = {x.text.replace(" ", "") for x in model.accesses if x.array == acc.array}
            if len(same) != 1 or acc.flat is None or not acc.affine or not _positive(acc.flat.coeff(var)) \
                    or any(m.count(var) > 1 for m, _ in acc.flat.terms):
                return Refused(f"{acc.array} is written at {acc.text}: the points must touch their own elements only")
    return _rewrite(source, facts, model.dialect, stmts[at], tm.offset.text() if not tm.offset.is_zero else "",
                    (before, loop, after), point, axis, factor, model)


def _rewrite(source: bytes, facts: KernelFacts, dialect: str, decl: Node, offset: str, parts: tuple[list[Node], Node, list[Node]],
             point: list[str], axis: str, f: int, model: KernelModel) -> Rewrite:
    before, loop, after = parts
    c = fresh(facts, source, f"c{axis}")
    d = "xyz".index(axis)
    block, grid = (s.format(a=axis, d=d) for s in _BUILTIN["opencl" if dialect == "opencl" else "cuda"])
    local, size = ("get_local_id({d})", "get_local_size({d})") if dialect == "opencl" else ("threadIdx.{a}", "blockDim.{a}")
    first = f"{block} * {f} + {c}"
    index = f"({first}) * {size.format(a=axis, d=d)} + {local.format(a=axis, d=d)}" + (f" + ({offset})" if offset else "")
    ren = _Renamer(source, set(point), c)
    arrays = [f"{_type(source, decl)} {decl_name}[{f}];" for decl_name in [point[0]]]
    setup = [f"{point[0]}[{c}] = {index};"]
    counters = []
    for s in before:
        if s.type == "declaration" and not set(_names(source, s)) & set(point):
            counters.append(src(source, s))  # the loop's counter, declared as it was
        elif s.type == "declaration":
            for item in s.children_by_field_name("declarator"):
                name = src(source, item.child_by_field_name("declarator") or item)
                arrays.append(f"{_type(source, s)} {name}[{f}];")
                if item.type == "init_declarator":
                    setup.append(f"{name}[{c}] = {ren.text(item.child_by_field_name('value'))};")
        else:
            setup.append(ren.text(s))
    touches = [a for a in model.accesses if a.start >= loop.start_byte and a.end <= loop.end_byte and a.depends_on(point[0])]
    live = f"if ({first} < {grid}) "
    loop_body = loop.child_by_field_name("body")
    assert loop_body is not None
    header = src(source, loop)[: loop_body.start_byte - loop.start_byte]
    inner = ren.text(loop_body)
    ind = indent_of(source, decl.start_byte)
    unroll = f"#pragma unroll\n{ind}for (int {c} = 0; {c} < {f}; ++{c})"
    lines = [f"if ({block} * {f} >= {grid}) return;  // blocks {block} * {f} ... {block} * {f} + {f - 1} are done here",
             *arrays, *counters,
             f"{unroll} {{", *("    " + x for x in setup), "}",
             f"{header}{{", f"    {unroll.replace(chr(10) + ind, chr(10) + ind + '    ')}",
             f"        {live if touches else ''}{inner.replace(chr(10), chr(10) + '        ')}", "}",
             *([f"{unroll}", f"    {live}{{", *("        " + ren.text(s) for s in after), "    }"] if after else [])]
    edit = Edit(decl.start_byte, (after[-1] if after else loop).end_byte, ("\n" + ind).join(lines))
    return Rewrite((edit,), None, f"{f} blocks' points per block along {axis}, the loop jammed (launch unchanged)")


class _Renamer:
    """A node's text with every use of a point's local `p` spelled `p[c]`."""

    def __init__(self, source: bytes, names: set[str], c: str) -> None:
        self.source, self.names, self.c = source, names, c

    def text(self, node: Node | None) -> str:
        if node is None:
            return ""
        out, at = "", node.start_byte
        for n in walk(node):
            if n.type == "identifier" and src(self.source, n) in self.names and n.start_byte >= at:
                out += self.source[at : n.end_byte].decode() + f"[{self.c}]"
                at = n.end_byte
        return out + self.source[at : node.end_byte].decode()


def _positive(step: Poly) -> bool:
    """A step that is never zero: a positive constant, or grid and block sizes (at least 1) times one."""
    return bool(step.terms) and all(c > 0 and all(re.fullmatch(r"(?:gridDim|blockDim)\.[xyz]", n) for n in m) for m, c in step.terms)


def _names(source: bytes, decl: Node) -> list[str]:
    out = []
    for item in decl.children_by_field_name("declarator"):
        d = item.child_by_field_name("declarator") if item.type == "init_declarator" else item
        if d is not None and d.type == "identifier":
            out.append(src(source, d))
    return out


def _type(source: bytes, decl: Node) -> str:
    first = decl.children_by_field_name("declarator")[0]
    return re.sub(r"\bconst\b\s*", "", source[decl.start_byte : first.start_byte].decode()).strip()


def _counter(source: bytes, loop: Node) -> str:
    init = loop.child_by_field_name("initializer")
    m = re.match(r"\s*(?:\w+\s+)?(\w+)\s*=", src(source, init) if init is not None else "")
    return m.group(1) if m else ""
