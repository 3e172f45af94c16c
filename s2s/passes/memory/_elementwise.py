"""An elementwise kernel's shape: one global index `i`, a body that touches every pointer only at `P[i]`.

Three launches are recognized: one thread per element (`int i = GID; if (i < E) S` or `if (i >= E) return; S...`), a
grid-stride loop (`for (int i = GID; i < E; i += STRIDE) S`) and a block-stride loop over a block's own row
(`for (int i = threadIdx.x; i < E; i += blockDim.x) S`), each loop after any declarations of values the same for every
element of the loop (passes/memory/_stride_loop.py). S is straight-line code (declarations and expression
statements, in `if` / `else` blocks of the same and `c ? a : b`; no loops, returns, jumps, barriers or atomics) whose every pointer parameter that the code writes is subscripted
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
from s2s.lang.parsing import src

from ..common.thread_index import GLOBAL_ID, compared_bound, elem_type, single_declaration, squeezed
from ..common.tree import body_node, statements, text
from ._element_accesses import Access, accesses
from ._element_code import straight
from ._stride_loop import stride_loop

FORBIDDEN = re.compile(r"__syncthreads|__syncwarp|__shfl|__ballot|barrier\s*\(|\batomic\w*|\batom_\w*|__shared__|__local\b|"
                        r"\bthreadIdx|\bblockIdx|\bget_local_id|\bget_group_id")
FLAT = {"declaration", "expression_statement", "comment"}
_INDEX_TYPES = {"int", "unsigned", "unsigned int", "long", "long int", "unsigned long", "long long", "unsigned long long",
                "size_t", "ptrdiff_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "std::size_t", "std::int64_t"}


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


def shape(source: bytes, facts: KernelFacts) -> Shape | str:
    """The kernel's elementwise shape, or why it has none."""
    gid = GLOBAL_ID.get(facts.dialect, GLOBAL_ID["cuda"])
    stmts = statements(body_node(source, facts))
    if stmts and stmts[-1].type == "for_statement" and all(x.type in {"declaration", "comment"} for x in stmts[:-1]):
        return stride_loop(source, facts, stmts, single_declaration, compared_bound, _finish)
    if len(stmts) < 2 or stmts[0].type != "declaration":
        return "neither `int i = GLOBAL_INDEX; if (i < n) ...` nor a grid-stride loop"
    d = single_declaration(source, stmts[0])
    if d is None or d[2] is None or not gid.match(squeezed(src(source, d[2]))):
        return "the first statement does not declare the global thread index"
    guard = stmts[1]
    cond = guard.child_by_field_name("condition") if guard.type == "if_statement" else None
    then = guard.child_by_field_name("consequence") if cond is not None else None
    if cond is None or then is None or guard.child_by_field_name("alternative") is not None:
        return f"`{d[1]}` is not followed by its guard `if ({d[1]} < BOUND)`"
    if len(stmts) == 2 and (bound := compared_bound(source, cond, d[1])) is not None:
        return _finish(source, facts, "guarded", d, bound, "", guard, then, stmts[0])
    bound = compared_bound(source, cond, d[1], ">=")
    if bound is None or len(stmts) < 3 or squeezed(src(source, then)) not in {"return;", "{return;}"}:
        return f"the guard is not `if ({d[1]} < BOUND) ...` or `if ({d[1]} >= BOUND) return;`"
    return _finish(source, facts, "guarded", d, bound, "", stmts[-1], None, stmts[0], lane_from=stmts[2])


def _finish(source: bytes, facts: KernelFacts, kind: str, d: tuple[str, str, Node | None], bound: str, stride: str,
            last: Node, body: Node | None, first: Node | None = None, lane_from: Node | None = None,
            uniform: frozenset[str] | None = None) -> Shape | str:
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
    if not nodes or not all(straight(n) for n in nodes):
        return "the element's code is not straight-line declarations and expression statements (in if / else blocks)"
    if FORBIDDEN.search(source[lane_start:lane_end].decode("utf-8", "replace")):
        return "barriers, shuffles, atomics, shared memory or thread indices in the element's code"
    found = accesses(source, facts, nodes, var, uniform)
    if isinstance(found, str):
        return found
    types = tuple((p.name, elem_type(p.type)) for p in facts.params if p.name in {a.array for a in found if not a.gather})
    if not types:
        return f"no pointer parameter is subscripted by {var}"
    return Shape(kind, var, ty, text(source, value), bound.strip(), stride, (first or last).start_byte, last.end_byte,
                 lane_start, lane_end, tuple(found), types)
