"""An elementwise kernel's shape: one global index `i`, a body that touches every pointer only at `P[i]`.

Two launches are recognized: one thread per element (`int i = GID; if (i < E) S` or `if (i >= E) return; S...`) and a
grid-stride loop (`for (int i = GID; i < E; i += STRIDE) S`). S is straight-line code (declarations and expression
statements, no branches, loops, barriers or atomics) whose every pointer parameter that the code writes is subscripted
by exactly `i`: checked numerically with the file's object-like macros substituted (`#define INCX 1`,
`X(i) x[(i) * INCX]`), so `x[(i) * INCX]` counts and `x[2 * i]`, `x[i + 1]` or `x[i * incx]` do not. A pointer the code
only reads may also be read at an index that is not a polynomial in `i` (a table `g[i % D]`, a broadcast `w[0]`):
such a read is a gather, kept as it is in each element's code (a neighbour `x[i + 1]` or a stride `x[2 * i]` is not).
Elements are then independent of each other (as the one-thread-per-element launch already promises), which is what
lets a thread take four of them at once.
The index may be any integer type (`int`, `int64_t`, `size_t`, ...).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.macros import expand, function_macros
from s2s.lang.parsing import src

from ._common import body_node, statements, text, walk
from ._element_code import element_node
from ._element_index import is_own_index, steps_with

_GID = {"cuda": re.compile(r"^(?:blockIdx\.x\*blockDim\.x\+threadIdx\.x|blockDim\.x\*blockIdx\.x\+threadIdx\.x|"
                           r"threadIdx\.x\+blockIdx\.x\*blockDim\.x|threadIdx\.x\+blockDim\.x\*blockIdx\.x)$"),
        "opencl": re.compile(r"^get_global_id0$")}
_STRIDE = {"cuda": re.compile(r"^(?:blockDim\.x\*gridDim\.x|gridDim\.x\*blockDim\.x)$"),
           "opencl": re.compile(r"^get_global_size0$")}
_OBJ_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]+?)[ \t]*$", re.M)
_FORBIDDEN = re.compile(r"__syncthreads|__syncwarp|__shfl|__ballot|barrier\s*\(|\batomic\w*|\batom_\w*|__shared__|__local\b|"
                        r"\bthreadIdx|\bblockIdx|\bget_local_id|\bget_group_id")
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "__global", "global"}
_FLAT = {"declaration", "expression_statement", "comment"}
_INDEX_TYPES = {"int", "unsigned", "unsigned int", "long", "long int", "unsigned long", "long long", "unsigned long long",
                "size_t", "ptrdiff_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "std::size_t", "std::int64_t"}


@dataclass(frozen=True)
class Access:
    start: int
    end: int
    array: str
    load_needed: bool  # False only for `P[i] = ...;` as a statement of its own
    written: bool  # the target of an assignment or ++/-- (through a macro too, which the facts' roles miss)
    gather: bool = False  # a read of a read-only pointer at an index other than `i`: left in each element's code


@dataclass(frozen=True)
class Shape:
    kind: str  # "guarded" (one thread per element) | "stride" (a grid-stride loop)
    var: str
    var_type: str
    gid: str
    bound: str
    stride: str
    start: int  # the text the rewrite replaces: the index declaration through the guarded statement, or the loop
    end: int
    lane_start: int  # the statements S, braces excluded
    lane_end: int
    accesses: tuple[Access, ...]
    types: tuple[tuple[str, str], ...]  # (array, element type) in parameter order, of the arrays read or written at `i`


def elem_type(declared: str) -> str:
    """`unsigned int` of `const unsigned int* __restrict__` (the facts' base type drops `unsigned`)."""
    return " ".join(w for w in re.sub(r"[*&]", " ", declared).split() if w not in _QUALIFIERS)


def _flat(text: str) -> str:
    return re.sub(r"\s+|[()]", "", text)


def _declared(source: bytes, decl: Node) -> tuple[str, str, Node | None] | None:
    """(type, name, value) of `T name = value;` with one declarator."""
    inits = [c for c in decl.named_children if c.type == "init_declarator"]
    if len(inits) != 1 or inits[0].child_by_field_name("declarator") is None:
        return None
    return text(source, decl.child_by_field_name("type")), text(source, inits[0].child_by_field_name("declarator")), \
        inits[0].child_by_field_name("value")


def shape(source: bytes, facts: KernelFacts) -> Shape | str:
    """The kernel's elementwise shape, or why it has none."""
    gid, stride = _GID.get(facts.dialect, _GID["cuda"]), _STRIDE.get(facts.dialect, _STRIDE["cuda"])
    stmts = statements(body_node(source, facts))
    if len(stmts) == 1 and stmts[0].type == "for_statement":
        loop = stmts[0]
        init, cond, upd, body = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update", "body"))
        d = _declared(source, init) if init is not None and init.type == "declaration" else None
        if d is None or d[2] is None or not gid.match(_flat(src(source, d[2]))):
            return "the loop's index does not start at the global thread index"
        m = re.fullmatch(rf"{d[1]}\+=(.+)", _flat(src(source, upd))) if upd is not None else None
        if m is None or not stride.match(m.group(1)):
            return "the loop does not step by the grid's thread count"
        bound = _bound(source, cond, d[1])
        if bound is None or body is None:
            return f"the loop's condition is not `{d[1]} < BOUND`"
        step = upd.child_by_field_name("right") if upd is not None else None
        return _finish(source, facts, "stride", d, bound, src(source, step) if step is not None else m.group(1), loop, body)
    if len(stmts) < 2 or stmts[0].type != "declaration":
        return "neither `int i = GLOBAL_INDEX; if (i < n) ...` nor a grid-stride loop"
    d = _declared(source, stmts[0])
    if d is None or d[2] is None or not gid.match(_flat(src(source, d[2]))):
        return "the first statement does not declare the global thread index"
    guard = stmts[1]
    cond = guard.child_by_field_name("condition") if guard.type == "if_statement" else None
    then = guard.child_by_field_name("consequence") if cond is not None else None
    if cond is None or then is None or guard.child_by_field_name("alternative") is not None:
        return f"`{d[1]}` is not followed by its guard `if ({d[1]} < BOUND)`"
    if len(stmts) == 2 and (bound := _bound(source, cond, d[1])) is not None:
        return _finish(source, facts, "guarded", d, bound, "", guard, then, stmts[0])
    bound = _bound(source, cond, d[1], ">=")
    if bound is None or len(stmts) < 3 or _flat(src(source, then)) not in {"return;", "{return;}"}:
        return f"the guard is not `if ({d[1]} < BOUND) ...` or `if ({d[1]} >= BOUND) return;`"
    return _finish(source, facts, "guarded", d, bound, "", stmts[-1], None, stmts[0], lane_from=stmts[2])


def _bound(source: bytes, cond: Node | None, var: str, op: str = "<") -> str | None:
    """BOUND of the condition `var OP BOUND`."""
    node = cond
    while node is not None and node.type in {"parenthesized_expression", "condition_clause"} and len(node.named_children) == 1:
        node = node.named_children[0]
    if node is None or node.type != "binary_expression" or text(source, node.child_by_field_name("operator")) != op:
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    return src(source, right) if left is not None and right is not None and src(source, left) == var else None


def _finish(source: bytes, facts: KernelFacts, kind: str, d: tuple[str, str, Node | None], bound: str, stride: str,
            last: Node, body: Node | None, first: Node | None = None, lane_from: Node | None = None) -> Shape | str:
    ty, var, value = d
    if ty not in _INDEX_TYPES:
        return f"the index `{var}` is a {ty}"
    if re.search(r"[\[=]|\+\+|--|\w\s*\(", bound) or re.search(rf"\b{var}\b", bound):
        return f"the bound `{bound}` is not a plain expression of the parameters"
    if body is not None and body.type == "compound_statement":
        lane_start, lane_end, nodes = body.start_byte + 1, body.end_byte - 1, statements(body)
    elif body is not None:
        lane_start, lane_end, nodes = body.start_byte, body.end_byte, [body]
    else:  # after `if (i >= n) return;`: the statements from lane_from to the end of the body
        lane_start, lane_end = (lane_from or last).start_byte, last.end_byte
        nodes = [n for n in statements(body_node(source, facts)) if n.start_byte >= lane_start]
    if not nodes or any(n.type not in _FLAT for n in nodes):
        return "the element's code is not straight-line declarations and expression statements"
    if _FORBIDDEN.search(source[lane_start:lane_end].decode("utf-8", "replace")):
        return "barriers, shuffles, atomics, shared memory or thread indices in the element's code"
    accesses = _accesses(source, facts, nodes, var)
    if isinstance(accesses, str):
        return accesses
    types = tuple((p.name, elem_type(p.type)) for p in facts.params if p.name in {a.array for a in accesses if not a.gather})
    if not types:
        return f"no pointer parameter is subscripted by {var}"
    return Shape(kind, var, ty, text(source, value), bound.strip(), stride, (first or last).start_byte, last.end_byte,
                 lane_start, lane_end, tuple(accesses), types)


def _accesses(source: bytes, facts: KernelFacts, nodes: list[Node], var: str) -> list[Access] | str:
    macros = function_macros(source)
    objects = {m.group(1): m.group(2) for m in _OBJ_MACRO.finditer(source.decode("utf-8", "replace"))}
    pointers = {p.name for p in facts.params if p.pointer}
    written_params = {p.name for p in facts.params if p.pointer and p.written}
    declared: set[str] = set()
    found: list[Access] = []
    covered: list[tuple[int, int]] = []
    for top in nodes:
        for n in walk(top):
            why = element_node(source, n, declared)
            if why:
                return why
            array, index = _subscript(source, n, macros, pointers)
            if array is None:
                continue
            parent = n.parent  # a write: the left side of an assignment, or ++/--
            is_write = parent is not None and (parent.type == "update_expression" or (
                parent.type == "assignment_expression" and parent.child_by_field_name("left") == n))
            gather = not is_own_index(index, var, objects)
            if gather and (is_write or array in written_params or steps_with(index, var)):
                return f"`{src(source, n)}` is not {array}[{var}]"
            write_only = (is_write and parent is not None and parent.type == "assignment_expression"
                          and text(source, parent.child_by_field_name("operator")) == "="
                          and parent.parent is not None and parent.parent.type == "expression_statement")
            found.append(Access(n.start_byte, n.end_byte, array, not write_only, bool(is_write), gather))
            covered.append((n.start_byte, n.end_byte))
        for n in walk(top):
            if n.type == "identifier" and src(source, n) in pointers and not any(s <= n.start_byte < e for s, e in covered):
                return f"`{src(source, n)}` is used other than as {src(source, n)}[{var}]"
    if not found:
        return "no pointer parameter is subscripted"
    written = {a.array for a in found if a.written}
    clash = next((a for a in found if a.gather and a.array in written), None)
    if clash is not None:  # read elsewhere than at i and written: elements would depend on each other
        return f"`{src(source, _node_at(nodes, clash))}` is not {clash.array}[{var}]"
    needed = {a.array for a in found if a.load_needed}
    return [Access(a.start, a.end, a.array, a.array in needed, a.written, a.gather) for a in found]


def _node_at(nodes: list[Node], a: Access) -> Node:
    """The subscript node of access `a`."""
    for top in nodes:
        for n in walk(top):
            if n.start_byte == a.start and n.end_byte == a.end:
                return n
    return nodes[0]


def _subscript(source: bytes, n: Node, macros: dict, pointers: set[str]) -> tuple[str | None, str]:
    """(array, index text) of `P[index]` or of a macro call expanding to it, P a pointer parameter; (None, "") else."""
    exp = expand(n, source, macros, {}) if n.type == "call_expression" else None
    data, node = (exp.data, exp.node) if exp is not None else (source, n)
    arr, idx = node.child_by_field_name("argument"), node.child_by_field_name("indices")
    if node.type != "subscript_expression" or arr is None or idx is None or src(data, arr) not in pointers:
        return None, ""
    return src(data, arr), src(data, idx).strip("[]")
