"""A 2-D elementwise kernel's shape: `int j = GID_X;` at the top, then one `if` guarding j: `j < M` alone or and-ed with
terms free of j (`if (i < n && j < n)`, either order), reached through declarations, `if (...) return;`, braces, `for`s
and `if`s free of j (nested guards, what thread-coarsen along y leaves). Its body is straight-line code in which every
pointer parameter is subscripted at an index that steps by exactly one element with j (`A[i * ld + j]`, `y[j]`: checked
numerically, macros substituted) or at one free of j (`x[i]`: read only, once per thread). The elements of a row are
then independent of each other, which is what lets a thread take four consecutive j at once.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

from tree_sitter import Node

from s2s.lang.cexpr import EvalError, evaluate
from s2s.lang.kernel_facts import KernelFacts
from s2s.lang.macros import function_macros
from s2s.lang.parsing import src

from ..common.thread_index import GLOBAL_ID, single_declaration, squeezed
from ..common.tree import body_node, statements, text, walk
from ._element_accesses import OBJ_MACRO
from ._element_accesses import subscript as _subscript
from ._element_code import element_node
from ._elementwise import FLAT, FORBIDDEN


@dataclass(frozen=True)
class Access:
    start: int
    end: int
    group: int  # index into Shape.groups


@dataclass(frozen=True)
class Group:
    """The accesses of one array at one index (compared numerically): a word of 4 (`row`) or one scalar."""
    array: str
    sample: str  # the text of its first access
    row: bool
    load_needed: bool
    written: bool


@dataclass(frozen=True)
class Shape:
    var: str
    var_type: str
    gid: str
    decl: tuple[int, int]  # j's declaration statement
    guard: tuple[int, int]  # the guarding `if` statement
    others: tuple[str, ...]  # the guard's terms free of j
    bound: str
    lane: tuple[int, int]  # the guarded statements, braces excluded
    accesses: tuple[Access, ...]
    groups: tuple[Group, ...]


def _mentions(source: bytes, node: Node | None, name: str) -> bool:
    return node is not None and any(n.type == "identifier" and src(source, n) == name for n in walk(node))


def _children(node: Node) -> list[Node]:
    return statements(node) if node.type == "compound_statement" else [node]


def _path(source: bytes, stmts: list[Node], var: str) -> Node | str:
    """The `if` guarding j among `stmts`, through the constructs that do not mention j, or why there is none."""
    on = [s for s in stmts if _mentions(source, s, var)]
    for s in stmts:
        if s in on or s.type in {"declaration", "preproc_call", "comment"}:
            continue
        if s.type == "if_statement" and re.fullmatch(r"\{?\s*(?:return|continue)\s*;\s*\}?", text(source, s.child_by_field_name("consequence"))):
            continue
        return f"`{src(source, s).splitlines()[0]}` runs once per thread: with four elements a thread it would run a quarter as often"
    if len(on) != 1:
        return f"`{var}` is used in {len(on)} statements after its declaration, not in one guarded statement"
    s = on[0]
    if s.type == "compound_statement":
        return _path(source, statements(s), var)
    if s.type == "for_statement":
        if any(_mentions(source, s.child_by_field_name(f), var) for f in ("initializer", "condition", "update")):
            return f"a loop over `{var}`"
        body = s.child_by_field_name("body")
        return _path(source, _children(body), var) if body is not None else "a loop without a body"
    if s.type == "if_statement" and s.child_by_field_name("alternative") is None:
        if _mentions(source, s.child_by_field_name("condition"), var):
            return s
        then = s.child_by_field_name("consequence")
        return _path(source, _children(then), var) if then is not None else "an if without a body"
    return f"`{src(source, s).splitlines()[0]}` uses `{var}` outside a guard `if ({var} < BOUND)`"


def _terms(source: bytes, node: Node | None, out: list[Node]) -> list[Node]:
    while node is not None and node.type in {"parenthesized_expression", "condition_clause"} and len(node.named_children) == 1:
        node = node.named_children[0]
    if node is not None and node.type == "binary_expression" and node.child_by_field_name("operator") is not None \
            and text(source, node.child_by_field_name("operator")) == "&&":
        _terms(source, node.child_by_field_name("left"), out)
        _terms(source, node.child_by_field_name("right"), out)
    elif node is not None:
        out.append(node)
    return out


def shape(source: bytes, facts: KernelFacts) -> Shape | str:
    """The kernel's 2-D elementwise shape, or why it has none."""
    gid = GLOBAL_ID.get(facts.dialect, GLOBAL_ID["cuda"])
    stmts = statements(body_node(source, facts))
    at = next((k for k, s in enumerate(stmts) if s.type == "declaration" and (d := single_declaration(source, s)) is not None
               and d[2] is not None and gid.match(squeezed(src(source, d[2])))), None)
    if at is None:
        return "no `int j = blockIdx.x * blockDim.x + threadIdx.x;` at the top of the body"
    ty, var, value = single_declaration(source, stmts[at]) or ("", "", None)
    if ty not in {"int", "unsigned", "unsigned int", "long", "size_t", "long long"}:
        return f"the index `{var}` is a {ty}"
    if any(s.type not in {"declaration", "preproc_call"} for s in stmts[:at]):
        return "a statement other than a declaration before the index"
    guard = _path(source, stmts[at + 1:], var)
    if isinstance(guard, str):
        return guard
    terms = [t for t in _terms(source, guard.child_by_field_name("condition"), []) if t.type != "comment"]
    with_j = [t for t in terms if _mentions(source, t, var)]
    op = with_j[0].child_by_field_name("operator") if len(with_j) == 1 and with_j[0].type == "binary_expression" else None
    left, right = (with_j[0].child_by_field_name(f) for f in ("left", "right")) if op is not None else (None, None)
    if op is None or text(source, op) != "<" or text(source, left) != var or _mentions(source, right, var):
        return f"the guard is not `if ({var} < BOUND)` (with terms free of `{var}` joined by &&)"
    bound = text(source, right)
    others = tuple(src(source, t) for t in terms if t is not with_j[0])
    if re.search(r"[\[=]|\+\+|--|\w\s*\(", bound) or re.search(r"(?<![=!<>])=(?!=)|\+\+|--", " ".join(others)):
        return f"the guard `{text(source, guard.child_by_field_name('condition'))}` is not plain comparisons of the parameters"
    body = guard.child_by_field_name("consequence")
    nodes = _children(body) if body is not None else []
    if body is None or not nodes or any(n.type not in FLAT for n in nodes):
        return "the element's code is not straight-line declarations and expression statements"
    lane = (body.start_byte + 1, body.end_byte - 1) if body.type == "compound_statement" else (body.start_byte, body.end_byte)
    if FORBIDDEN.search(source[lane[0]:lane[1]].decode("utf-8", "replace")):
        return "barriers, shuffles, atomics, shared memory or thread indices in the element's code"
    found = _accesses(source, facts, nodes, var)
    if isinstance(found, str):
        return found
    accesses, groups = found
    return Shape(var, ty, text(source, value), (stmts[at].start_byte, stmts[at].end_byte), (guard.start_byte, guard.end_byte),
                 others, bound, lane, tuple(accesses), tuple(groups))


def _accesses(source: bytes, facts: KernelFacts, nodes: list[Node], var: str) -> tuple[list[Access], list[Group]] | str:
    macros = function_macros(source)
    objects = {m.group(1): m.group(2) for m in OBJ_MACRO.finditer(source.decode("utf-8", "replace"))}
    pointers = {p.name for p in facts.params if p.pointer}
    declared: set[str] = set()
    keys: list[tuple[str, tuple[int, ...]]] = []
    groups, accesses = list[Group](), list[Access]()
    rng, envs = random.Random(13), [dict[str, int](), {}, {}]
    for top in nodes:
        for n in walk(top):
            why = element_node(source, n, declared)
            if why:
                return why
            array, index = _subscript(source, n, macros, pointers)
            if array is None:
                continue
            local = sorted(set(re.findall(r"[A-Za-z_]\w*", index)) & declared)
            if local:
                return f"`{src(source, n)}`: its index uses `{local[0]}`, computed in the element's code"
            values = _values(index, var, objects, envs, rng)
            if values is None:
                return f"`{src(source, n)}` neither steps by one element with {var} nor is free of it"
            row, key = values
            is_write, write_only = _write(source, n)
            if (array, key) not in keys:
                keys.append((array, key))
                groups.append(Group(array, src(source, n), row, False, False))
            g, old = keys.index((array, key)), groups[keys.index((array, key))]
            groups[g] = Group(array, old.sample, row, old.load_needed or not write_only, old.written or is_write)
            accesses.append(Access(n.start_byte, n.end_byte, g))
        for n in walk(top):
            if n.type == "identifier" and src(source, n) in pointers and not any(a.start <= n.start_byte < a.end for a in accesses):
                return f"`{src(source, n)}` is used other than subscripted"
    if not accesses:
        return "no pointer parameter is subscripted"
    for w in groups:
        if w.written and not w.row:
            return f"`{w.sample}` is written at an index free of {var}: the threads of a row would race"
        if w.written and sum(h.array == w.array for h in groups) > 1:
            return f"`{w.array}` is written and accessed at more than one index"
    return accesses, groups


def _write(source: bytes, n: Node) -> tuple[bool, bool]:
    """(n is written: the left of an assignment or ++/--, n is only written: `n = ...;` as a statement)"""
    p = n.parent
    written = p is not None and (p.type == "update_expression" or (p.type == "assignment_expression" and p.child_by_field_name("left") == n))
    only = written and p is not None and text(source, p.child_by_field_name("operator")) == "=" and p.parent is not None \
        and p.parent.type == "expression_statement"
    return bool(written), bool(only)


def _values(index: str, var: str, objects: dict[str, str], envs: list[dict[str, int]], rng: random.Random
            ) -> tuple[bool, tuple[int, ...]] | None:
    """(True: steps by one with var, False: free of var; the index's values at var = 0 in each env), or None."""
    out, kind = [], set()
    for env in envs:
        def resolve(nm: str, env: dict[str, int] = env) -> int | str:
            return objects[nm] if nm in objects else env.setdefault(nm, rng.randint(3, 997))

        try:
            at = [evaluate(index, resolve) for env[var] in (0, 1, 6, 1 << 12)]
        except (EvalError, ZeroDivisionError, RecursionError, TypeError):
            return None
        steps = [at[k] - at[0] for k in range(1, 4)]
        if steps not in ([1, 6, 1 << 12], [0, 0, 0]):
            return None
        kind.add(steps[0] == 1)
        out.append(int(at[0]))
    return (kind.pop(), tuple(out)) if len(kind) == 1 else None
